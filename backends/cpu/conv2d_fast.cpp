// Fast float32 NHWC conv paths (groups = 1, any stride/dilation/padding) as implicit GEMMs on the
// register-tiled micro-kernels of microkernels.hpp. No im2col: tiles address input rows through
// small pointer lists (a shared zero row stands for the padding). Workspace: one zero row, the
// transposed filter for the input gradient, and for the filter gradient at most 16 partial
// filters (fewer when the filter is large, none beyond 64 MiB) summed in a fixed order.
#include <algorithm>
#include <vector>

#include <tbb/parallel_for.h>

#include "dagrad/backends/cpu/conv2d_kernels.hpp"
#include "dagrad/backends/cpu/microkernels.hpp"

namespace dagrad::cpu {
namespace {

using ops::Conv2DGeometry;
using i64 = std::int64_t;

constexpr i64 kTilesPerTask = 8;    // pixel tiles per task in forward / input gradient
constexpr i64 kReduceBlock = 64;    // channels (forward) or filters (input gradient) per pass
constexpr i64 kColumnGroup = 128;   // output columns per task
constexpr i64 kPixelBlock = 128;    // pixels per pass of the filter gradient (fits L1 with 64 columns)
constexpr i64 kFilterColumns = 64;  // filter-gradient columns per task (4 AVX-512 registers)

// The shared driver of the two "rows" ops. For pixel p of a tile and tap t, source(p, t) gives the
// row of `len` values it reads (nullptr in the padding); b is [tap][len][cols]; out is [pixel][cols].
template <class Source>
void rows_driver(i64 pixels, i64 taps, i64 len, i64 cols, const float* b, float* out, const Source& source) {
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
      i64 used = 0;
      for (i64 t = 0; t < taps; ++t) {
        bool any = false;
        // Tile s owns taps * mr slots; its taps are `rows` pointers apart, as the kernel reads them.
        const float** at = a.data() + s * taps * mr + used * rows;
        for (i64 r = 0; r < rows; ++r) {
          const float* src = source(p0 + r, t);
          any |= src != nullptr;
          at[r] = src ? src : zeros.data();
        }
        if (any) tap_list[static_cast<std::size_t>(s * taps + used++)] = t;
      }
      tap_count[static_cast<std::size_t>(s)] = used;
      for (i64 r = 0; r < rows; ++r) c[static_cast<std::size_t>(s * mr + r)] = out + (p0 + r) * cols;
    }
    const float* bt[kMaxTaps];
    for (i64 j0 = 0; j0 == 0 || j0 < len; j0 += kReduceBlock) {  // len 0 still writes zeros
      const i64 jn = std::min(kReduceBlock, len - j0);
      for (i64 tile = tile0; tile < tile1; ++tile) {
        const i64 s = tile - tile0, rows = std::min(mr, pixels - tile * mr), used = tap_count[static_cast<std::size_t>(s)];
        if (used == 0 && j0 > 0) continue;
        // Taps go in batches of kMaxTaps; the first batch of the first block starts from zero.
        for (i64 t0 = 0; t0 < std::max<i64>(used, 1); t0 += kMaxTaps) {
          const i64 tn = std::min<i64>(kMaxTaps, used - t0);
          for (i64 t = 0; t < tn; ++t)
            bt[t] = b + (tap_list[static_cast<std::size_t>(s * taps + t0 + t)] * len + j0) * cols + col0;
          mk.rows(static_cast<int>(rows), ncols, a.data() + s * taps * mr + t0 * rows, j0, bt, tn, jn, cols,
                  c.data() + s * mr, col0, j0 > 0 || t0 > 0);
        }
      }
    }
  });
}

}  // namespace

bool conv2d_fast_path_applies(const Conv2DGeometry& g) {
  return g.data_format == ops::DataFormat::NHWC && g.groups == 1;
}

void conv2d_forward_fast(const Conv2DGeometry& g, const float* x, const float* f, float* y) {
  const i64 C = g.in_depth, W = g.in_cols, H = g.in_rows;
  const i64 per_image = g.out_rows * g.out_cols;
  rows_driver(g.batch * per_image, g.filter_rows * g.filter_cols, C, g.out_depth, f, y, [&](i64 p, i64 t) -> const float* {
    const i64 n = p / per_image, oh = p % per_image / g.out_cols, ow = p % g.out_cols;
    const i64 ih = oh * g.stride_rows - g.pad_top + t / g.filter_cols * g.dilation_rows;
    const i64 iw = ow * g.stride_cols - g.pad_left + t % g.filter_cols * g.dilation_cols;
    if (ih < 0 || ih >= H || iw < 0 || iw >= W) return nullptr;
    return x + ((n * H + ih) * W + iw) * C;
  });
}

void conv2d_backprop_input_fast(const Conv2DGeometry& g, const float* f, const float* dy, float* dx) {
  const i64 C = g.in_depth, K = g.out_depth, taps = g.filter_rows * g.filter_cols;
  // The filter as [tap][k][c]: the input gradient is a GEMM against its transpose.
  std::vector<float> ft(static_cast<std::size_t>(taps * K * C));
  tbb::parallel_for(i64{0}, taps, [&](i64 t) {
    for (i64 c = 0; c < C; ++c)
      for (i64 k = 0; k < K; ++k) ft[static_cast<std::size_t>((t * K + k) * C + c)] = f[(t * C + c) * K + k];
  });
  const i64 per_image = g.in_rows * g.in_cols;
  rows_driver(g.batch * per_image, taps, K, C, ft.data(), dx, [&](i64 p, i64 t) -> const float* {
    const i64 n = p / per_image, ih = p % per_image / g.in_cols, iw = p % g.in_cols;
    const i64 th = ih + g.pad_top - t / g.filter_cols * g.dilation_rows;
    const i64 tw = iw + g.pad_left - t % g.filter_cols * g.dilation_cols;
    if (th < 0 || tw < 0 || th % g.stride_rows != 0 || tw % g.stride_cols != 0) return nullptr;
    const i64 oh = th / g.stride_rows, ow = tw / g.stride_cols;
    if (oh >= g.out_rows || ow >= g.out_cols) return nullptr;
    return dy + ((n * g.out_rows + oh) * g.out_cols + ow) * K;
  });
}

void conv2d_backprop_filter_fast(const Conv2DGeometry& g, const float* x, const float* dy, float* df) {
  const MicroKernels& mk = micro_kernels();
  const i64 mr = mk.tile_rows;
  const i64 C = g.in_depth, K = g.out_depth, H = g.in_rows, W = g.in_cols;
  const i64 taps = g.filter_rows * g.filter_cols, fsize = taps * C * K;
  const i64 cgw = mr * 8;  // channels per task
  const i64 cgroups = (C + cgw - 1) / cgw, kgroups = (K + kFilterColumns - 1) / kFilterColumns;
  const i64 per_chunk = cgroups * kgroups;
  const i64 chunks = filter_reduction_chunks(g.batch * g.out_rows, per_chunk, fsize * 4);
  std::vector<float> partial(static_cast<std::size_t>(chunks > 1 ? chunks * fsize : 0));
  const i64 per_image = g.out_rows * g.out_cols;
  // A task owns a (channels x columns) slab of every tap of one chunk's partial filter. Pixel
  // blocks are the outer loop, so a block of dy (kPixelBlock x 64 floats) stays in L1 while all
  // taps and channel tiles use it.
  tbb::parallel_for(i64{0}, chunks * per_chunk, [&](i64 task) {
    const i64 chunk = task / per_chunk, cg = task % per_chunk / kgroups, kgi = task % kgroups;
    const i64 c0 = cg * cgw, c1 = std::min(C, c0 + cgw), k0 = kgi * kFilterColumns, kn = std::min(kFilterColumns, K - k0);
    float* d = chunks > 1 ? partial.data() + chunk * fsize : df;
    for (i64 t = 0; t < taps; ++t)
      for (i64 c = c0; c < c1; ++c) std::fill_n(d + (t * C + c) * K + k0, kn, 0.0f);
    const float* xs[kPixelBlock];
    const float* ys[kPixelBlock];
    // Chunk boundaries fall on whole output rows, as filter_reduction_chunks assumed.
    const i64 rows = g.batch * g.out_rows;
    const i64 p_end = rows * (chunk + 1) / chunks * g.out_cols;
    for (i64 pb = rows * chunk / chunks * g.out_cols; pb < p_end; pb += kPixelBlock) {
      for (i64 t = 0; t < taps; ++t) {
        const i64 kh = t / g.filter_cols, kw = t % g.filter_cols;
        i64 m = 0;
        for (i64 p = pb; p < std::min(p_end, pb + kPixelBlock); ++p) {
          const i64 n = p / per_image, oh = p % per_image / g.out_cols, ow = p % g.out_cols;
          const i64 ih = oh * g.stride_rows - g.pad_top + kh * g.dilation_rows;
          const i64 iw = ow * g.stride_cols - g.pad_left + kw * g.dilation_cols;
          if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;  // padding adds nothing
          xs[m] = x + ((n * H + ih) * W + iw) * C;
          ys[m++] = dy + p * K;
        }
        if (m == 0) continue;
        float* dt = d + t * C * K;
        for (i64 c = c0; c < c1; c += mr) {
          mk.pixels(static_cast<int>(std::min(mr, c1 - c)), kn, xs, c, ys, k0, m, dt + c * K + k0, K);
        }
      }
    }
  });
  if (chunks > 1) {
    tbb::parallel_for(i64{0}, fsize, [&](i64 e) {
      float total = partial[static_cast<std::size_t>(e)];
      for (i64 chunk = 1; chunk < chunks; ++chunk) total += partial[static_cast<std::size_t>(chunk * fsize + e)];
      df[e] = total;
    });
  }
}

}  // namespace dagrad::cpu
