// The NCHW filter gradient of 1x1 convolutions without strides or padding (groups = 1) as one
// GEMM over every pixel of the batch, on the layout as it is: df[c][k] = sum_p x[c][p] * dy[k][p].
// One side keeps its planes as the broadcast rows of the `rows` micro-kernel; the other, the
// GEMM's columns, is transposed block by block in cache (transpose_block), so that each pixel's
// values lie side by side: the side with fewer channels where it fills a vector (less to
// transpose), else the wider one. strips (which transposes dy, the larger side here) ran the 56x56
// 64->256 layer at 30 ms where this takes about 20 (Zen 4).
//
// The pixels are split into fixed reduction chunks (filter_reduction_chunks: a function of the
// shapes and the machine, never the thread count), each summed in pixel order into its partial,
// and the partials are added in chunk order: the same bits for any thread count.
#include <algorithm>
#include <vector>

#include <tbb/parallel_for.h>

#include "dagrad/backends/cpu/conv2d/kernels.hpp"
#include "dagrad/backends/cpu/conv2d/reduction_partials.hpp"
#include "dagrad/backends/cpu/conv2d/tile_walk.hpp"
#include "dagrad/backends/cpu/microkernels.hpp"
#include "dagrad/backends/cpu/scratch_array.hpp"
#include "dagrad/backends/cpu/transpose.hpp"

namespace dagrad::cpu {
namespace {

using ops::Conv2DGeometry;
using i64 = std::int64_t;

constexpr i64 kBlockBytes = 32 << 10;  // one block of the transposed side: L1
constexpr i64 kMaxBlockPixels = 512;
constexpr i64 kPageFloats = 1024;  // planes this far apart are out of the hardware prefetcher's reach

// One side of the product: `channels` planes of `plane` pixels per image.
struct Side {
  const float* data;
  i64 channels;
};

}  // namespace

bool conv2d_filter_nchw_pointwise_applies(const Conv2DGeometry& g) {
  return conv2d_nchw_pointwise_applies(g) && std::max(g.in_depth, g.out_depth) >= micro_kernels().vector_width;
}

void conv2d_backprop_filter_nchw_pointwise(const Conv2DGeometry& g, const float* x, const float* dy, float* df) {
  const MicroKernels& mk = micro_kernels();
  const i64 C = g.in_depth, K = g.out_depth, plane = g.in_rows * g.in_cols, vl = mk.vector_width;
  // The columns: the side with fewer channels where that fills a vector, else the wider one.
  const bool x_columns = std::min(C, K) >= vl ? C <= K : C > K;
  const Side rows = x_columns ? Side{dy, K} : Side{x, C}, cols = x_columns ? Side{x, C} : Side{dy, K};
  const i64 block = std::clamp<i64>(kBlockBytes / (cols.channels * i64{sizeof(float)}) / vl * vl, vl, kMaxBlockPixels);
  const i64 total = g.batch * plane;
  const i64 chunks = filter_reduction_chunks(total, 1, C * K * i64{sizeof(float)});
  // Partials as the GEMM writes them: rows x cols (df itself where the rows are x's channels).
  std::vector<float> transposed(static_cast<std::size_t>(x_columns ? C * K : 0));
  ReductionPartials<float> partials(chunks, C * K, x_columns ? transposed.data() : df);
  const bool prefetch = plane >= kPageFloats;
  tbb::parallel_for(i64{0}, chunks, [&](i64 chunk) {
    float* out = partials.chunk(chunk);
    const ScratchArray<float> packed(block * cols.channels);  // each block transposed before it is read
    const float* b = packed.data();
    const float* a[kMaxRows];
    float* c[kMaxRows];
    const i64 q_end = total * (chunk + 1) / chunks;
    for (i64 q = total * chunk / chunks; q < q_end;) {  // blocks within one image
      const i64 n = q / plane, p0 = q % plane, pixels = std::min({block, plane - p0, q_end - q});
      transpose_block(cols.data + n * cols.channels * plane + p0, plane, packed.data(), cols.channels, cols.channels,
                      pixels);
      const bool first = q == total * chunk / chunks;
      for (i64 r0 = 0; r0 < rows.channels; r0 += mk.tile_rows) {
        const i64 tile = std::min<i64>(mk.tile_rows, rows.channels - r0);
        for (i64 r = 0; r < tile; ++r) {
          a[r] = rows.data + (n * rows.channels + r0 + r) * plane + p0;
          c[r] = out + (r0 + r) * cols.channels;
        }
        // The next tile's planes, pages apart, go to L2 while this one computes.
        for (i64 r = r0 + tile; prefetch && r < std::min(rows.channels, r0 + 2 * tile); ++r)
          prefetch_to_l2(rows.data + (n * rows.channels + r) * plane + p0, pixels * i64{sizeof(float)});
        mk.rows(static_cast<int>(tile), cols.channels, a, 0, &b, 1, pixels, cols.channels, c, 0, !first);
      }
      q += pixels;
    }
  });
  if (!x_columns) return partials.sum_to(df);
  partials.sum_to(transposed.data());  // K x C
  transpose_block(transposed.data(), C, df, K, K, C);
}

}  // namespace dagrad::cpu
