// Native bfloat16 NHWC Conv2D and input gradient (groups = 1, any stride/dilation/padding) on the
// AVX-512 BF16 rows kernel: the reduction runs over channels (Conv2D) or filters (input gradient),
// which are contiguous in the activation rows, so those rows feed vdpbf16ps as they are, two
// elements a step; only the filter is packed, once per call, into pairs ([tap][pair][column],
// taps x ceil(len/2) x columns rounded up to 16 words). Each output is summed in float32 registers
// over all taps in one kernel call and rounded once, so results do not depend on threads. The
// input gradient takes its pixels in stride-phase order (stride_phase_order.hpp).
#include <algorithm>
#include <vector>

#include <tbb/parallel_for.h>

#include "dagrad/backends/cpu/bf16_kernels.hpp"
#include "dagrad/backends/cpu/conv2d/kernels.hpp"
#include "dagrad/backends/cpu/conv2d/stride_phase_order.hpp"
#include "dagrad/core/allocator.hpp"

namespace dagrad::cpu {
namespace {

using ops::Conv2DGeometry;
using i64 = std::int64_t;
using u16 = std::uint16_t;
using u32 = std::uint32_t;

constexpr i64 kTilesPerTask = 8;   // pixel tiles of kBf16MaxRows per task
constexpr i64 kColumnGroup = 128;  // output columns per task

const u16* bits(const bfloat16* p) { return reinterpret_cast<const u16*>(p); }
u16* bits(bfloat16* p) { return reinterpret_cast<u16*>(p); }

// out[p][0:cols] = sum_t sum_j source(p, t)[j] * panel[t][j][0:cols] for every pixel p, where the
// panel holds pairs of j (tap stride `tap_stride` words, row stride ldb) and source gives the row
// of `len` bfloat16 values pixel p reads through tap t (nullptr in the padding). Register tiles
// take the pixels in the order pixel_of(0), pixel_of(1), ... (a permutation of the pixels).
template <class PixelOf, class Source>
void rows_driver(i64 pixels, i64 taps, i64 len, i64 cols, const u32* panel, i64 tap_stride, i64 ldb, u16* out,
                 const PixelOf& pixel_of, const Source& source) {
  const Bf16Kernels& bk = *bf16_kernels();
  constexpr i64 mr = kBf16MaxRows;
  const std::vector<u16> zeros(static_cast<std::size_t>(len + 2), 0);
  const i64 tiles = (pixels + mr - 1) / mr;
  const i64 tile_groups = (tiles + kTilesPerTask - 1) / kTilesPerTask;
  const i64 col_groups = (cols + kColumnGroup - 1) / kColumnGroup;
  tbb::parallel_for(i64{0}, tile_groups * col_groups, [&](i64 task) {
    const i64 tg = task / col_groups, col0 = (task % col_groups) * kColumnGroup;
    const i64 ncols = std::min(kColumnGroup, cols - col0);
    std::vector<const u16*> a(static_cast<std::size_t>(taps * mr));
    std::vector<i64> used_taps(static_cast<std::size_t>(taps));
    std::vector<const u32*> b(static_cast<std::size_t>(taps));  // the used taps' panels
    u16* c[mr];
    for (i64 tile = tg * kTilesPerTask; tile < std::min(tiles, (tg + 1) * kTilesPerTask); ++tile) {
      const i64 p0 = tile * mr, rows = std::min(mr, pixels - p0);
      i64 pixel[mr];
      for (i64 r = 0; r < rows; ++r) pixel[r] = pixel_of(p0 + r);
      // The taps that reach the input for at least one pixel of the tile, each `rows` pointers.
      i64 used = 0;
      for (i64 t = 0; t < taps; ++t) {
        bool any = false;
        const u16** at = a.data() + used * rows;
        for (i64 r = 0; r < rows; ++r) {
          const u16* src = source(pixel[r], t);
          any |= src != nullptr;
          at[r] = src ? src : zeros.data();
        }
        if (any) used_taps[static_cast<std::size_t>(used++)] = t;
      }
      for (i64 r = 0; r < rows; ++r) c[r] = out + pixel[r] * cols;
      if (used == 0) {  // all padding: the outputs are zero
        for (i64 r = 0; r < rows; ++r) std::fill_n(c[r] + col0, ncols, u16{0});
        continue;
      }
      for (i64 u = 0; u < used; ++u) b[u] = panel + used_taps[static_cast<std::size_t>(u)] * tap_stride;
      bk.rows(static_cast<int>(rows), ncols, a.data(), 0, b.data(), col0, used, len, ldb, c, col0);
    }
  });
}

}  // namespace

void conv2d_forward_bf16(const Conv2DGeometry& g, const bfloat16* x, const bfloat16* f, bfloat16* y) {
  const Bf16Kernels& bk = *bf16_kernels();
  const i64 C = g.in_depth, K = g.out_depth, W = g.in_cols, H = g.in_rows, taps = g.filter_rows * g.filter_cols;
  const i64 ldb = (K + 15) / 16 * 16, tap_stride = (C + 1) / 2 * ldb;
  // The filter [tap][c][k] as pairs of channels: panel[t][c/2][k] = {f[t][c][k], f[t][c+1][k]}.
  Buffer panel_buffer(host_allocator(), static_cast<std::size_t>(std::max<i64>(taps * tap_stride, 1)) * sizeof(u32));
  u32* panel = static_cast<u32*>(panel_buffer.data());
  tbb::parallel_for(i64{0}, taps, [&](i64 t) {
    std::vector<const u16*> rows(static_cast<std::size_t>(C));
    for (i64 c = 0; c < C; ++c) rows[static_cast<std::size_t>(c)] = bits(f) + (t * C + c) * K;
    bk.pack_pairs(rows.data(), 0, C, K, panel + t * tap_stride, ldb);
  });
  const i64 per_image = g.out_rows * g.out_cols;
  const auto identity = [](i64 p) { return p; };
  rows_driver(g.batch * per_image, taps, C, K, panel, tap_stride, ldb, bits(y), identity,
              [&](i64 p, i64 t) -> const u16* {
                const i64 n = p / per_image, oh = p % per_image / g.out_cols, ow = p % g.out_cols;
                const i64 ih = oh * g.stride_rows - g.pad_top + t / g.filter_cols * g.dilation_rows;
                const i64 iw = ow * g.stride_cols - g.pad_left + t % g.filter_cols * g.dilation_cols;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) return nullptr;
                return bits(x) + ((n * H + ih) * W + iw) * C;
              });
}

void conv2d_backprop_input_bf16(const Conv2DGeometry& g, const bfloat16* f, const bfloat16* dy, bfloat16* dx) {
  const i64 C = g.in_depth, K = g.out_depth, taps = g.filter_rows * g.filter_cols;
  const i64 ldb = (C + 15) / 16 * 16, tap_stride = (K + 1) / 2 * ldb;
  // The transposed filter as pairs of filters: panel[t][k/2][c] = {f[t][c][k], f[t][c][k+1]}.
  Buffer panel_buffer(host_allocator(), static_cast<std::size_t>(std::max<i64>(taps * tap_stride, 1)) * sizeof(u32));
  u32* panel = static_cast<u32*>(panel_buffer.data());
  const u16* fb = bits(f);
  tbb::parallel_for(i64{0}, taps, [&](i64 t) {
    for (i64 q = 0; q < (K + 1) / 2; ++q) {
      u32* row = panel + t * tap_stride + q * ldb;
      for (i64 c = 0; c < C; ++c) {
        const u16* fc = fb + (t * C + c) * K + 2 * q;
        row[c] = u32{fc[0]} | (2 * q + 1 < K ? u32{fc[1]} << 16 : 0u);
      }
      std::fill(row + C, row + ldb, 0u);
    }
  });
  const i64 per_image = g.in_rows * g.in_cols;
  const StridePhaseOrder order(g.in_rows, g.in_cols, g.stride_rows, g.stride_cols);
  const auto phase_order = [&](i64 q) { return q / per_image * per_image + order.pixel(q % per_image); };
  rows_driver(g.batch * per_image, taps, K, C, panel, tap_stride, ldb, bits(dx), phase_order,
              [&](i64 p, i64 t) -> const u16* {
                const i64 n = p / per_image, ih = p % per_image / g.in_cols, iw = p % g.in_cols;
                const i64 th = ih + g.pad_top - t / g.filter_cols * g.dilation_rows;
                const i64 tw = iw + g.pad_left - t % g.filter_cols * g.dilation_cols;
                if (th < 0 || tw < 0 || th % g.stride_rows != 0 || tw % g.stride_cols != 0) return nullptr;
                const i64 oh = th / g.stride_rows, ow = tw / g.stride_cols;
                if (oh >= g.out_rows || ow >= g.out_cols) return nullptr;
                return bits(dy) + ((n * g.out_rows + oh) * g.out_cols + ow) * K;
              });
}

}  // namespace dagrad::cpu
