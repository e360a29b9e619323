// Fast float32 NHWC Conv2D and input gradient (any stride/dilation/padding, groups) as
// implicit GEMMs on the register-tiled micro-kernels of microkernels.hpp (the filter gradient is
// in filter_nhwc_fast.cpp). No im2col: tiles address input rows through small pointer lists (a
// shared zero row stands for the padding). Workspace: one zero row and the transposed filter for
// the input gradient.
#include <algorithm>
#include <vector>

#include <tbb/parallel_for.h>

#include "dagrad/backends/cpu/conv2d/kernels.hpp"
#include "dagrad/backends/cpu/conv2d/stride_phase_order.hpp"
#include "dagrad/backends/cpu/microkernels.hpp"

namespace dagrad::cpu {
namespace {

using ops::Conv2DGeometry;
using i64 = std::int64_t;

constexpr i64 kTilesPerTask = 8;   // pixel tiles per task in forward / input gradient
constexpr i64 kReduceBlock = 64;   // channels (forward) or filters (input gradient) per pass
constexpr i64 kColumnGroup = 128;  // output columns per task

// One work item of rows_driver: its output row, and where its window starts.
struct Located {
  float* out;
  i64 image_row;  // n times the rows of the image it reads
  i64 row, col;   // forward: oh * stride - pad; input gradient: ih + pad
};

// Each tap's offset inside the window: kh * dilation_rows and kw * dilation_cols.
struct TapOffsets {
  std::vector<i64> rows, cols;
};
TapOffsets tap_offsets(const Conv2DGeometry& g) {
  TapOffsets t;
  for (i64 kh = 0; kh < g.filter_rows; ++kh)
    for (i64 kw = 0; kw < g.filter_cols; ++kw) {
      t.rows.push_back(kh * g.dilation_rows);
      t.cols.push_back(kw * g.dilation_cols);
    }
  return t;
}

// The shared driver of the two "rows" ops. Work item q of a tile is decoded once by locate(q)
// (its output row out_row(loc) and whatever source needs); source(loc, t) gives the row of `len`
// values tap t reads (nullptr in the padding); b holds each tap's len x cols matrix; out rows
// take `cols` values. Most items read a real row through every tap, each at a fixed distance
// from the item's own origin: interior(loc) gives that origin (nullptr for the others), and
// tap_delta[t] the distance, so such items skip the per-tap bounds checks (measured: they took
// 15% of a 14x14x32 Conv2D).
struct TapMatrices {
  const float* data;
  i64 tap_stride, ldb;      // floats from one tap's matrix to the next, and between its rows
  bool transposed = false;  // stored cols x len instead (ldb between columns): the rows_t kernel
};
template <class Locate, class Source, class Interior>
void rows_driver(i64 pixels, i64 taps, i64 len, i64 cols, TapMatrices b, const Locate& locate, const Source& source,
                 const Interior& interior, const std::vector<i64>& tap_delta) {
  const MicroKernels& mk = micro_kernels();
  const i64 mr = mk.tile_rows;
  const std::vector<float> zeros(static_cast<std::size_t>(len), 0.0f);
  const i64 tiles = (pixels + mr - 1) / mr;
  const i64 tile_groups = (tiles + kTilesPerTask - 1) / kTilesPerTask;
  const i64 col_groups = (cols + kColumnGroup - 1) / kColumnGroup;
  tbb::parallel_for(i64{0}, tile_groups * col_groups, [&](i64 task) {
    const i64 tg = task / col_groups, col0 = (task % col_groups) * kColumnGroup;
    const i64 ncols = std::min(kColumnGroup, cols - col0);
    const i64 tile0 = tg * kTilesPerTask, tile1 = std::min(tiles, tile0 + kTilesPerTask);
    // Per tile: the taps that touch at least one of its pixels, with each pixel's row.
    std::vector<const float*> a(static_cast<std::size_t>(kTilesPerTask * taps * mr));
    std::vector<i64> tap_list(static_cast<std::size_t>(kTilesPerTask * taps));
    std::vector<i64> tap_count(static_cast<std::size_t>(kTilesPerTask));
    std::vector<float*> c(static_cast<std::size_t>(kTilesPerTask * mr));
    for (i64 tile = tile0; tile < tile1; ++tile) {
      const i64 s = tile - tile0, p0 = tile * mr, rows = std::min(mr, pixels - p0);
      decltype(locate(p0)) loc[kMaxRows];
      for (i64 r = 0; r < rows; ++r) {
        loc[r] = locate(p0 + r);
        c[static_cast<std::size_t>(s * mr + r)] = loc[r].out;
      }
      const float* origin[kMaxRows];
      bool any_interior = false;
      for (i64 r = 0; r < rows; ++r) any_interior |= (origin[r] = interior(loc[r])) != nullptr;
      if (any_interior) {  // then every tap is used
        for (i64 t = 0; t < taps; ++t) {
          const float** at = a.data() + s * taps * mr + t * rows;
          for (i64 r = 0; r < rows; ++r) {
            const float* src = origin[r] ? origin[r] + tap_delta[static_cast<std::size_t>(t)] : source(loc[r], t);
            at[r] = src ? src : zeros.data();
          }
          tap_list[static_cast<std::size_t>(s * taps + t)] = t;
        }
        tap_count[static_cast<std::size_t>(s)] = taps;
        continue;
      }
      i64 used = 0;
      for (i64 t = 0; t < taps; ++t) {
        bool any = false;
        // Tile s owns taps * mr slots; its taps are `rows` pointers apart, as the kernel reads them.
        const float** at = a.data() + s * taps * mr + used * rows;
        for (i64 r = 0; r < rows; ++r) {
          const float* src = source(loc[r], t);
          any |= src != nullptr;
          at[r] = src ? src : zeros.data();
        }
        if (any) tap_list[static_cast<std::size_t>(s * taps + used++)] = t;
      }
      tap_count[static_cast<std::size_t>(s)] = used;
    }
    const float* bt[kMaxTaps];
    for (i64 j0 = 0; j0 == 0 || j0 < len; j0 += kReduceBlock) {  // len 0 still writes zeros
      const i64 jn = std::min(kReduceBlock, len - j0);
      for (i64 tile = tile0; tile < tile1; ++tile) {
        const i64 s = tile - tile0, rows = std::min(mr, pixels - tile * mr),
                  used = tap_count[static_cast<std::size_t>(s)];
        if (used == 0 && j0 > 0) continue;
        // Taps go in batches of kMaxTaps; the first batch of the first block starts from zero.
        for (i64 t0 = 0; t0 < std::max<i64>(used, 1); t0 += kMaxTaps) {
          const i64 tn = std::min<i64>(kMaxTaps, used - t0);
          for (i64 t = 0; t < tn; ++t)
            bt[t] = b.data + tap_list[static_cast<std::size_t>(s * taps + t0 + t)] * b.tap_stride +
                    (b.transposed ? j0 + col0 * b.ldb : j0 * b.ldb + col0);
          (b.transposed ? mk.rows_t : mk.rows)(static_cast<int>(rows), ncols, a.data() + s * taps * mr + t0 * rows, j0,
                                               bt, tn, jn, b.ldb, c.data() + s * mr, col0, j0 > 0 || t0 > 0);
        }
      }
    }
  });
}

}  // namespace

bool conv2d_fast_path_applies(const Conv2DGeometry& g) {
  // Groups run one after another; very thin groups (depthwise) stay on the generic path, where
  // a register tile of one channel would waste most of its lanes.
  const bool wide_groups = g.groups == 1 || (g.filter_in_depth >= 4 && g.out_depth_per_group() >= 8);
  return g.data_format == ops::DataFormat::NHWC && wide_groups;
}

void conv2d_forward_fast(const Conv2DGeometry& g, const float* x, const float* f, float* y) {
  const i64 C = g.in_depth, W = g.in_cols, H = g.in_rows, K = g.out_depth;
  const i64 cg = g.filter_in_depth, kg = g.out_depth_per_group();
  const i64 per_image = g.out_rows * g.out_cols;
  const TapOffsets tap = tap_offsets(g);
  const i64 taps = static_cast<i64>(tap.rows.size());
  const i64 reach_rows = (g.filter_rows - 1) * g.dilation_rows, reach_cols = (g.filter_cols - 1) * g.dilation_cols;
  std::vector<i64> delta;  // only where a window fits in the image: then each offset is below H * W * C
  if (reach_rows < H && reach_cols < W)
    for (i64 t = 0; t < taps; ++t) delta.push_back((tap.rows[t] * W + tap.cols[t]) * C);
  for (i64 group = 0; group < g.groups; ++group) {
    const auto locate = [&](i64 p) {
      const i64 n = p / per_image, oh = p % per_image / g.out_cols, ow = p % g.out_cols;
      return Located{y + p * K + group * kg, n * H, oh * g.stride_rows - g.pad_top, ow * g.stride_cols - g.pad_left};
    };
    const TapMatrices filter{f + group * kg, cg * K, K};  // f is [tap][cg][K]
    const auto source = [&](const Located& l, i64 t) -> const float* {
      const i64 ih = l.row + tap.rows[t], iw = l.col + tap.cols[t];
      if (ih < 0 || ih >= H || iw < 0 || iw >= W) return nullptr;
      return x + ((l.image_row + ih) * W + iw) * C + group * cg;
    };
    // A window wholly inside the image reads tap t at (rows[t] * W + cols[t]) * C from its corner.
    const auto interior = [&](const Located& l) -> const float* {
      if (l.row < 0 || l.row > H - 1 - reach_rows || l.col < 0 || l.col > W - 1 - reach_cols) return nullptr;
      return x + ((l.image_row + l.row) * W + l.col) * C + group * cg;
    };
    rows_driver(g.batch * per_image, taps, cg, kg, filter, locate, source, interior, delta);
  }
}

void conv2d_backprop_input_fast(const Conv2DGeometry& g, const float* f, const float* dy, float* dx) {
  const i64 C = g.in_depth, K = g.out_depth, H = g.in_rows, W = g.in_cols;
  const i64 cg = g.filter_in_depth, kg = g.out_depth_per_group();
  const TapOffsets tap = tap_offsets(g);
  const i64 taps = static_cast<i64>(tap.rows.size());
  // The input gradient is a GEMM against the filter transposed to [tap][k][c], vectorised along
  // c. Below half a vector of channels (first layers: C = 1 or 3) it uses f as it is, [tap][c][k],
  // and the rows_t kernel vectorised along k.
  const bool narrow = cg <= (micro_kernels().vector_width - 1) / 2;  // cg * 2 < width, without the product
  std::vector<float> ft(static_cast<std::size_t>(narrow ? 0 : taps * K * cg));
  if (!narrow) {
    tbb::parallel_for(i64{0}, taps, [&](i64 t) {
      for (i64 c = 0; c < cg; ++c)
        for (i64 k = 0; k < K; ++k) ft[static_cast<std::size_t>((t * K + k) * cg + c)] = f[(t * cg + c) * K + k];
    });
  }
  // Input pixels go in stride-phase order: the pixels of one phase (ih % stride, iw % stride)
  // meet the same taps, so a register tile skips the taps that miss it instead of multiplying
  // zero rows (with stride 2, three quarters of the work otherwise).
  const StridePhaseOrder order(H, W, g.stride_rows, g.stride_cols);
  const i64 per_image = H * W;
  const bool unit_strides = g.stride_rows == 1 && g.stride_cols == 1;
  const i64 reach_rows = (g.filter_rows - 1) * g.dilation_rows, reach_cols = (g.filter_cols - 1) * g.dilation_cols;
  std::vector<i64> delta;  // only where some pixel is interior: then each offset is below OH * OW * K
  if (unit_strides && reach_rows < g.out_rows && reach_cols < g.out_cols)
    for (i64 t = 0; t < taps; ++t) delta.push_back(-(tap.rows[t] * g.out_cols + tap.cols[t]) * K);
  for (i64 group = 0; group < g.groups; ++group) {
    const auto locate = [&](i64 q) {
      const i64 n = q / per_image, pix = order.pixel(q % per_image);
      const i64 ih = pix / W, iw = pix % W;
      return Located{dx + (n * per_image + pix) * C + group * cg, n * g.out_rows, ih + g.pad_top, iw + g.pad_left};
    };
    const TapMatrices filter = narrow ? TapMatrices{f + group * kg, cg * K, K, true}
                                      : TapMatrices{ft.data() + group * kg * cg, K * cg, cg};  // the group's k rows
    const auto source = [&](const Located& l, i64 t) -> const float* {
      // The output position is (ih + pad - kh * dilation) / stride where that divides evenly.
      const i64 th = l.row - tap.rows[t], tw = l.col - tap.cols[t];
      if (th < 0 || tw < 0 || th % g.stride_rows != 0 || tw % g.stride_cols != 0) return nullptr;
      const i64 oh = th / g.stride_rows, ow = tw / g.stride_cols;
      if (oh >= g.out_rows || ow >= g.out_cols) return nullptr;
      return dy + ((l.image_row + oh) * g.out_cols + ow) * K + group * kg;
    };
    // At stride 1, an input pixel every tap of which reaches an output reads tap t at
    // -(rows[t] * OW + cols[t]) * K from dy's row at (ih + pad_top, iw + pad_left).
    const auto interior = [&](const Located& l) -> const float* {
      if (!unit_strides || l.row < reach_rows || l.row >= g.out_rows || l.col < reach_cols || l.col >= g.out_cols)
        return nullptr;
      return dy + ((l.image_row + l.row) * g.out_cols + l.col) * K + group * kg;
    };
    rows_driver(g.batch * per_image, taps, kg, cg, filter, locate, source, interior, delta);
  }
}

}  // namespace dagrad::cpu
