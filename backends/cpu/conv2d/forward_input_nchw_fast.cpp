// Fast float32 NCHW Conv2D and Conv2DBackpropInput (see kernels.hpp): channels are the
// rows of the register tiles, vectors run along output (or input) columns, and each task reads
// its rows of the other operand from a small zero-padded panel. Each output element is summed
// over channel blocks, taps and channels in an order fixed by the shapes: deterministic.
#include <algorithm>
#include <cmath>
#include <vector>

#include <tbb/parallel_for.h>

#include "dagrad/backends/cpu/conv2d/kernels.hpp"
#include "dagrad/backends/cpu/conv2d/nchw_panel.hpp"
#include "dagrad/backends/cpu/nchw_microkernels.hpp"

namespace dagrad::cpu {
namespace {

using ops::Conv2DGeometry;
using namespace nchw;

constexpr i64 kReduceBlock = 64;      // channels summed per pass = channels of one panel
constexpr i64 kChannelBlock = 64;     // tile-row channels per task
constexpr i64 kSegmentsPerTask = 64;  // vectors of columns per task (sets the rows per task)

struct Tile {
  i64 mr, nv;
};
Tile pick_tile(const NchwMicroKernels& mk, i64 segments, i64 rows) {
  const i64 nv = std::clamp<i64>(segments, 1, mk.max_segments);
  return {std::min<i64>(mk.segment_rows[nv], rows), nv};
}

// The HWIO filter as [group][row tile][tap][j][mr] (rows past the end zero): each tap's broadcasts
// are read in order. Conv2D: rows = output channels, j = input channels; the input gradient
// swaps them. f index of (group, row, j, tap) comes from `index`.
template <class Index>
std::vector<float> pack_filter(i64 groups, i64 rows, i64 len, i64 taps, i64 mr, const float* f, Index index) {
  const i64 tiles = ceil_div(rows, mr);
  std::vector<float> packed(static_cast<std::size_t>(groups * tiles * taps * len * mr), 0.0f);
  tbb::parallel_for(i64{0}, groups * tiles, [&](i64 gt) {
    const i64 grp = gt / tiles, tile = gt % tiles;
    for (i64 t = 0; t < taps; ++t)
      for (i64 j = 0; j < len; ++j)
        for (i64 r = 0; r < std::min(mr, rows - tile * mr); ++r)
          packed[static_cast<std::size_t>(((gt * taps + t) * len + j) * mr + r)] = f[index(grp, tile * mr + r, j, t)];
  });
  return packed;
}

struct Segment {
  i64 row, col;  // flattened row (n * rows + r) and first column (or first m of a column class)
  int valid;
};

}  // namespace

bool conv2d_nchw_fast_path_applies(const Conv2DGeometry& g) {
  // Panels and column classes grow with strides, window spans and paddings: extreme values (the
  // advisory kind, up to INT64_MAX) go to the generic path, whose memory does not depend on them.
  constexpr i64 kMaxStride = 64, kMaxSpan = 256;
  const bool moderate =
      g.stride_rows <= kMaxStride && g.stride_cols <= kMaxStride && g.pad_top <= kMaxSpan && g.pad_bottom <= kMaxSpan &&
      g.pad_left <= kMaxSpan && g.pad_right <= kMaxSpan && g.dilation_rows <= kMaxSpan && g.dilation_cols <= kMaxSpan &&
      g.effective_filter_rows() <= g.in_rows + 2 * kMaxSpan && g.effective_filter_cols() <= g.in_cols + 2 * kMaxSpan;
  if (!(g.data_format == ops::DataFormat::NCHW && moderate && g.batch > 0 && g.in_rows > 0 && g.in_cols > 0 &&
        g.out_rows > 0 && g.out_cols > 0 && g.filter_rows > 0 && g.filter_cols > 0 && g.out_depth > 0 && g.groups > 0))
    return false;
  // Per-thread panels (and the input gradient's class-ordered rows): a task reads at most R * KH
  // rows of at most 64 channels, each row wider than the image by the strides, window and pads.
  // Bounded by kMaxPanelFloats, estimated from above in double (no product can wrap).
  constexpr double kMaxPanelFloats = 1 << 22;  // 16 MiB of float32
  const double VL = nchw_micro_kernels().vector_width;
  const double segs = std::ceil(static_cast<double>(std::min(g.in_cols, g.out_cols)) / VL);
  const double R = std::ceil(static_cast<double>(kSegmentsPerTask) / segs);  // rows per task at most
  // (The pads count as they are, not as their kMaxSpan cap: that cap alone kept 28x28 and 14x14
  // layers of 128 and 256 channels off this path, ten times slower on the generic one.)
  const double width = (static_cast<double>(g.out_cols) + 2 * VL) * static_cast<double>(g.stride_cols) +
                       static_cast<double>(g.in_cols) + static_cast<double>(g.effective_filter_cols()) +
                       static_cast<double>(g.pad_left) + static_cast<double>(g.pad_right);
  const double panel = (R * static_cast<double>(g.filter_rows) + 1 + R) * static_cast<double>(kReduceBlock) * width;
  return panel <= kMaxPanelFloats;
}

void conv2d_forward_fast_nchw(const Conv2DGeometry& g, const float* x, const float* f, float* y) {
  const NchwMicroKernels& mk = nchw_micro_kernels();
  const i64 VL = mk.vector_width;
  const i64 C = g.in_depth, H = g.in_rows, W = g.in_cols, K = g.out_depth, OH = g.out_rows, OW = g.out_cols;
  const i64 cg = g.filter_in_depth, kg = g.out_depth_per_group(), KH = g.filter_rows, KW = g.filter_cols;
  const i64 taps = KH * KW, sw = g.stride_cols, rows_total = g.batch * OH;
  const i64 segs_per_row = ceil_div(OW, VL);
  const i64 R = std::min(rows_total, ceil_div(kSegmentsPerTask, segs_per_row));
  const Tile tile = pick_tile(mk, R * segs_per_row, kg);
  const i64 mr = tile.mr, ktiles = ceil_div(kg, mr), tiles_per_task = std::max<i64>(1, kChannelBlock / mr);
  const i64 kblocks = ceil_div(ktiles, tiles_per_task), row_blocks = ceil_div(rows_total, R);
  const auto packed = pack_filter(g.groups, kg, cg, taps, mr, f,
                                  [&](i64 grp, i64 k, i64 ci, i64 t) { return (t * cg + ci) * K + grp * kg + k; });
  // Tap (kh, kw) reads panel phase (kw * dw) % sw from column ow + (kw * dw) / sw.
  const i64 phase_len = segs_per_row * VL + (KW - 1) * g.dilation_cols / sw;
  tbb::parallel_for(i64{0}, row_blocks * g.groups * kblocks, [&](i64 task) {
    const i64 rb = task / (g.groups * kblocks), grp = task / kblocks % g.groups, kb = task % kblocks;
    const i64 p0 = rb * R, p1 = std::min(rows_total, p0 + R);
    thread_local RowSlots slots;
    thread_local std::vector<float> storage;
    std::vector<i64> row_key(static_cast<std::size_t>((p1 - p0) * KH));
    slots.reset();
    for (i64 p = p0; p < p1; ++p)
      for (i64 kh = 0; kh < KH; ++kh) {
        const i64 ih = ops::conv_input_pos(p % OH, kh, g.stride_rows, g.dilation_rows, g.pad_top, H);
        const i64 key = ih < 0 ? -1 : p / OH * H + ih;
        row_key[static_cast<std::size_t>((p - p0) * KH + kh)] = key;
        slots.request(key);
      }
    slots.finish();
    for (auto& key : row_key) key = slots.slot(key);  // now the slot of each (row, kh)
    std::vector<Segment> segs;
    for (i64 p = p0; p < p1; ++p)
      for (i64 s = 0; s < segs_per_row; ++s) segs.push_back({p, s * VL, static_cast<int>(std::min(VL, OW - s * VL))});
    const i64 nsegs = static_cast<i64>(segs.size());
    std::vector<const float*> a(static_cast<std::size_t>(taps)), b(static_cast<std::size_t>(taps * tile.nv));
    float* c[kNchwMaxSegments];
    int valid[kNchwMaxSegments];
    Panel panel{nullptr, 0, sw, phase_len};
    for (i64 j0 = 0; j0 < cg; j0 += kReduceBlock) {
      const i64 jn = std::min(kReduceBlock, cg - j0);
      panel.channels = jn;
      fill_panel(panel, storage, slots, x, C, H, W, grp * cg + j0, -g.pad_left);
      for (i64 kt = kb * tiles_per_task; kt < std::min(ktiles, (kb + 1) * tiles_per_task); ++kt) {
        for (i64 t = 0; t < taps; ++t)
          a[static_cast<std::size_t>(t)] = packed.data() + (((grp * ktiles + kt) * taps + t) * cg + j0) * mr;
        for (i64 s0 = 0; s0 < nsegs; s0 += tile.nv) {
          const i64 nv = std::min(tile.nv, nsegs - s0);
          for (i64 v = 0; v < nv; ++v) {
            const Segment& sg = segs[static_cast<std::size_t>(s0 + v)];
            for (i64 t = 0; t < taps; ++t) {
              const i64 shift = t % KW * g.dilation_cols;
              const i64 slot = row_key[static_cast<std::size_t>((sg.row - p0) * KH + t / KW)];
              b[static_cast<std::size_t>(t * nv + v)] = panel.at(slot, 0, shift % sw, sg.col + shift / sw);
            }
            c[v] = y + ((sg.row / OH * K + grp * kg + kt * mr) * OH + sg.row % OH) * OW + sg.col;
            valid[v] = sg.valid;
          }
          mk.segments(static_cast<int>(std::min(mr, kg - kt * mr)), static_cast<int>(nv), a.data(), mr, b.data(),
                      panel.channel_stride(), taps, jn, c, OH * OW, valid, j0 > 0);
        }
      }
    }
  });
}

void conv2d_backprop_input_fast_nchw(const Conv2DGeometry& g, const float* f, const float* dy, float* dx) {
  const NchwMicroKernels& mk = nchw_micro_kernels();
  const i64 VL = mk.vector_width;
  const i64 C = g.in_depth, H = g.in_rows, W = g.in_cols, K = g.out_depth, OH = g.out_rows, OW = g.out_cols;
  const i64 cg = g.filter_in_depth, kg = g.out_depth_per_group(), KH = g.filter_rows, KW = g.filter_cols;
  const i64 taps = KH * KW, sh = g.stride_rows, sw = g.stride_cols, rows_total = g.batch * H;
  // Input columns fall into classes rho = iw mod sw; class rho holds iw = rho + sw * m, m < count,
  // and reads dy column ow = m + e through each tap kw with (rho + pad_left - kw * dw) = e * sw.
  std::vector<i64> count(static_cast<std::size_t>(sw)), base(static_cast<std::size_t>(sw) + 1, 0);
  i64 segs_per_row = 0, left = 0, right = 1;
  for (i64 rho = 0; rho < sw; ++rho) {
    const i64 n = rho < W ? ceil_div(W - rho, sw) : 0, segs = ceil_div(n, VL);
    count[static_cast<std::size_t>(rho)] = n;
    base[static_cast<std::size_t>(rho) + 1] = base[static_cast<std::size_t>(rho)] + segs * VL;
    segs_per_row += segs;
    for (i64 kw = 0; kw < KW && n > 0; ++kw) {
      const i64 t = rho + g.pad_left - kw * g.dilation_cols;
      if (t - floor_div(t, sw) * sw != 0) continue;
      left = std::max(left, -floor_div(t, sw));
      right = std::max(right, segs * VL + floor_div(t, sw));
    }
  }
  const i64 local_row = base[static_cast<std::size_t>(sw)];  // a row of the class-ordered output buffer
  // Taps of class (sigma, rho), sigma = (ih + pad_top) mod sh: they and only they reach a dy element.
  std::vector<std::vector<i64>> class_taps(static_cast<std::size_t>(sh * sw));
  for (i64 t = 0; t < taps; ++t)
    for (i64 sigma = 0; sigma < sh; ++sigma)
      for (i64 rho = 0; rho < sw; ++rho) {
        const i64 th = sigma - t / KW * g.dilation_rows, tw = rho + g.pad_left - t % KW * g.dilation_cols;
        if (th - floor_div(th, sh) * sh == 0 && tw - floor_div(tw, sw) * sw == 0)
          class_taps[static_cast<std::size_t>(sigma * sw + rho)].push_back(t);
      }
  const i64 R = std::min(rows_total, ceil_div(kSegmentsPerTask, segs_per_row));
  const Tile tile = pick_tile(mk, ceil_div(R, sh) * ceil_div(segs_per_row, sw), cg);
  const i64 mr = tile.mr, ctiles = ceil_div(cg, mr), tiles_per_task = std::max<i64>(1, kChannelBlock / mr);
  const i64 cblocks = ceil_div(ctiles, tiles_per_task), row_blocks = ceil_div(rows_total, R);
  const auto packed = pack_filter(g.groups, cg, kg, taps, mr, f,
                                  [&](i64 grp, i64 ci, i64 k, i64 t) { return (t * cg + ci) * K + grp * kg + k; });
  tbb::parallel_for(i64{0}, row_blocks * g.groups * cblocks, [&](i64 task) {
    const i64 rb = task / (g.groups * cblocks), grp = task / cblocks % g.groups, cb = task % cblocks;
    const i64 p0 = rb * R, p1 = std::min(rows_total, p0 + R);
    const i64 ct0 = cb * tiles_per_task, ct1 = std::min(ctiles, ct0 + tiles_per_task);
    thread_local RowSlots slots;
    thread_local std::vector<float> storage, out_storage;
    std::vector<i64> row_key(static_cast<std::size_t>((p1 - p0) * KH));
    slots.reset();
    for (i64 p = p0; p < p1; ++p)
      for (i64 kh = 0; kh < KH; ++kh) {
        const i64 oh = ops::conv_output_pos(p % H, kh, sh, g.dilation_rows, g.pad_top, OH);
        const i64 key = oh < 0 ? -1 : p / H * OH + oh;
        row_key[static_cast<std::size_t>((p - p0) * KH + kh)] = key;
        slots.request(key);
      }
    slots.finish();
    for (auto& key : row_key) key = slots.slot(key);
    // With sw > 1 a class's columns are strided in dx: compute into a class-ordered buffer first.
    const i64 task_channels = std::min(cg, ct1 * mr) - ct0 * mr;
    float* out = sw > 1 ? scratch(out_storage, task_channels * (p1 - p0) * local_row) : nullptr;
    std::vector<const float*> a(static_cast<std::size_t>(taps)), b(static_cast<std::size_t>(taps * tile.nv));
    std::vector<Segment> segs;
    float* c[kNchwMaxSegments];
    int valid[kNchwMaxSegments];
    Panel panel{nullptr, 0, 1, left + right};
    for (i64 j0 = 0; j0 == 0 || j0 < kg; j0 += kReduceBlock) {
      const i64 jn = std::min(kReduceBlock, kg - j0);
      panel.channels = jn;
      fill_panel(panel, storage, slots, dy, K, OH, OW, grp * kg + j0, -left);
      for (i64 sigma = 0; sigma < sh; ++sigma)
        for (i64 rho = 0; rho < sw; ++rho) {
          const auto& ct_taps = class_taps[static_cast<std::size_t>(sigma * sw + rho)];
          const i64 ntaps = static_cast<i64>(ct_taps.size()), n_rho = count[static_cast<std::size_t>(rho)];
          if (n_rho == 0 || (ntaps == 0 && j0 > 0)) continue;
          segs.clear();
          for (i64 p = p0; p < p1; ++p)
            if ((p % H + g.pad_top) % sh == sigma)
              for (i64 m0 = 0; m0 < n_rho; m0 += VL)
                segs.push_back({p, m0, static_cast<int>(std::min(VL, n_rho - m0))});
          const i64 nsegs = static_cast<i64>(segs.size());
          for (i64 ct = ct0; ct < ct1; ++ct) {
            for (i64 i = 0; i < ntaps; ++i)
              a[static_cast<std::size_t>(i)] =
                  packed.data() + (((grp * ctiles + ct) * taps + ct_taps[static_cast<std::size_t>(i)]) * kg + j0) * mr;
            for (i64 s0 = 0; s0 < nsegs; s0 += tile.nv) {
              const i64 nv = std::min(tile.nv, nsegs - s0);
              for (i64 v = 0; v < nv; ++v) {
                const Segment& sg = segs[static_cast<std::size_t>(s0 + v)];
                for (i64 i = 0; i < ntaps; ++i) {
                  const i64 t = ct_taps[static_cast<std::size_t>(i)];
                  const i64 e = floor_div(rho + g.pad_left - t % KW * g.dilation_cols, sw);
                  const i64 slot = row_key[static_cast<std::size_t>((sg.row - p0) * KH + t / KW)];
                  b[static_cast<std::size_t>(i * nv + v)] = panel.at(slot, 0, 0, sg.col + e + left);
                }
                const i64 ci0 = ct * mr;
                c[v] = sw > 1 ? out + ((ci0 - ct0 * mr) * (p1 - p0) + sg.row - p0) * local_row +
                                    base[static_cast<std::size_t>(rho)] + sg.col
                              : dx + ((sg.row / H * C + grp * cg + ci0) * H + sg.row % H) * W + sg.col;
                valid[v] = sg.valid;
              }
              mk.segments(static_cast<int>(std::min(mr, cg - ct * mr)), static_cast<int>(nv), a.data(), mr, b.data(),
                          panel.channel_stride(), ntaps, jn, c, sw > 1 ? (p1 - p0) * local_row : H * W, valid, j0 > 0);
            }
          }
        }
    }
    if (sw == 1) return;
    for (i64 ci = 0; ci < task_channels; ++ci)
      for (i64 p = p0; p < p1; ++p) {
        float* row = dx + ((p / H * C + grp * cg + ct0 * mr + ci) * H + p % H) * W;
        const float* from = out + (ci * (p1 - p0) + p - p0) * local_row;
        for (i64 rho = 0; rho < sw; ++rho)
          for (i64 m = 0; m < count[static_cast<std::size_t>(rho)]; ++m)
            row[rho + sw * m] = from[base[static_cast<std::size_t>(rho)] + m];
      }
  });
}

}  // namespace dagrad::cpu
