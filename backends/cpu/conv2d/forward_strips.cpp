// The float32 NHWC Conv2D of small-channel layers (first layers: C below half a vector) on
// zero-padded input strips (strips.hpp). On a strip a window row's KW taps are KW * C
// contiguous values, so the grid micro-kernel runs KH rows of KW * C values instead of KH * KW
// taps of C values (3 of 3 for C = 1 in place of 9 of 1), with no per-tap padding checks:
//   y[p][0:K] = sum_kh sum_j strip[origin(p) + kh * row + j] * f[kh][j][0:K],  j < KW * C.
// Where y outgrows half the last-level cache (y is a first layer's largest tensor: 25 MiB for
// 224x224x3 at batch 8), each tile asks for the next tile's output lines in L2 while it computes:
// the kernel's stores would otherwise stall on write misses (zeroing each row first did that too,
// with a pass more: 7x7/2 on Zen 4 1.05x at 1 thread, 1.04x at 2 since the prefetch replaced it);
// where y stays in cache neither is needed (the zeroing cost 10-15% on 28x28 layers). Measured on
// Zen 5 against the rows kernel this path ran before: 1.3x on 224x224x3 7x7/2, 1.1-1.4x on 3x3
// layers of 1 and 3 channels. Tiles keep to kMaxRows pixels: taller ones ran slower (more pointer
// registers than the CPU has). One channel at stride 1 (pixel step 1) takes the slide kernel,
// which broadcasts each strip value once per tile row: on Zen 4 28x28 3x3 and 5x5 layers of 1 -> 32
// channels ran 1.15x and 1.07x faster, with the same bits. Where the windows of consecutive output
// rows overlap, a task copies each input row once into a slice that its rows of one image share,
// and the slide kernel takes a whole row a call, its tiles of one size in one loop (28x28 3x3
// 1 -> 32 on Zen 4: 1.27x at 1 and 2 threads, 5x5 1.16x).
// half, and bfloat16 without AVX-512 BF16: x and f are widened once, and each output row is
// narrowed from a float32 row (no float32 copy of y, the largest tensor of a first layer): bitwise
// the float32 path on the widened tensors, rounded once. _FusedConv2D's epilogue applies to each
// float32 row before it narrows (epilogue.hpp: each sum rounded to bfloat16 first).
// bfloat16 with AVX-512 BF16: vdpbf16ps adds two products a step, here two window rows: strip word
// v of row pair i = {strip row 2i [v], strip row 2i + 1 [v]} (a zero row partners an odd KH's
// last), filter pair panel [i][j][k] = {f[2i][j][k], f[2i + 1][j][k]}. Any pixel origin then reads
// whole words (pairs along a window row would split words at odd origins, and pair a window's
// last value with its neighbour's). Each output row is summed in float32 and rounded once. Only
// for windows of kPairsFromWindow values or more.
// Workspace per task: one strip (at most kMaxStripFloats values; bfloat16: its pair words too) and,
// for half and bfloat16, one float32 output row.
#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include <tbb/parallel_for.h>

#include "dagrad/backends/cpu/bf16_kernels.hpp"
#include "dagrad/backends/cpu/conv2d/epilogue.hpp"
#include "dagrad/backends/cpu/conv2d/kernels.hpp"
#include "dagrad/backends/cpu/conv2d/paths.hpp"
#include "dagrad/backends/cpu/conv2d/strips.hpp"
#include "dagrad/backends/cpu/conv2d/tile_walk.hpp"
#include "dagrad/backends/cpu/cpu_info.hpp"
#include "dagrad/backends/cpu/float_buffer.hpp"
#include "dagrad/backends/cpu/microkernels.hpp"

namespace dagrad::cpu {
namespace {

using ops::Conv2DGeometry;
using i64 = std::int64_t;

constexpr i64 kRowsPerTask = 4;                // output rows per task
constexpr i64 kColumnGroup = 128;              // output channels per micro-kernel call
constexpr i64 kMaxStripFloats = i64{1} << 16;  // 256 KiB
// Window values from which bfloat16 runs on row pairs: each tile's float32 accumulators are loaded
// and stored once, so short windows gain nothing (measured on Zen 5: 3x3x3 and 5x5x1 as fast as
// the widened form, 5x5x3 1.25x, 7x7x3 1.5x faster).
constexpr i64 kPairsFromWindow = 48;

}  // namespace

bool conv2d_forward_strips_apply(const Conv2DGeometry& g) {
  return g.data_format == ops::DataFormat::NHWC && g.groups == 1 && g.dilation_cols == 1 &&
         g.in_depth <= (micro_kernels().vector_width - 1) / 2 && strips_are_compact(g, kMaxStripFloats);
}

namespace {

template <class T>
void forward_strips(const Conv2DGeometry& g, const T* x, const T* f, T* y, bool prefetch_rows,
                    const ConvEpilogue* epilogue = nullptr) {
  const MicroKernels& mk = micro_kernels();
  const i64 K = g.out_depth, OW = g.out_cols, KH = g.filter_rows;
  const i64 len = g.filter_cols * g.in_depth, step = strip_pixel_step(g);  // window row; pixel to pixel
  const Strips st = strips_of(g);
  const i64 rows = g.batch * g.out_rows;
  // x and f widened once (x is small beside y here: each of its values lands in KH / stride strips,
  // so widening it strip by strip measured slower), y narrowed row by row.
  constexpr bool kWiden = !std::is_same_v<T, float>;
  FloatBuffer wide_x(0), wide_f(0);
  const float* xf = nullptr;
  const float* ff = nullptr;
  if constexpr (kWiden) {
    const ConvSizes sizes = conv2d_sizes(g);
    wide_x = to_float(x, sizes.input);
    wide_f = to_float(f, sizes.filter);
    xf = wide_x.data(), ff = wide_f.data();
  } else {
    xf = x, ff = f;
  }
  const i64 tile_rows = std::min<i64>(kMaxRows, mk.grid_max_rows(std::min(K, kColumnGroup)));
  long long offsets[kMaxRows];  // each pixel's window origin on the strip, from the tile's first
  for (i64 r = 0; r < tile_rows; ++r) offsets[r] = r * step;
  // Where the windows of consecutive output rows overlap, a task's rows of one image share one
  // slice of padded input rows (strips_share_rows): row oh's strip starts (oh - first) *
  // stride_rows rows into it (the kernel reads the same values).
  const bool slices = strips_share_rows(g);
  const i64 slice_rows = slices ? (kRowsPerTask - 1) * g.stride_rows + KH : 0;  // stride_rows <= KH: no overflow
  tbb::parallel_for(i64{0}, (rows + kRowsPerTask - 1) / kRowsPerTask, [&](i64 task) {
    std::vector<float> strip(static_cast<std::size_t>(slices ? slice_rows * st.row_floats : st.floats));
    std::vector<float> out_row(static_cast<std::size_t>(kWiden ? OW * K : 0));
    const i64 q_end = std::min(rows, (task + 1) * kRowsPerTask);
    i64 slice_image = -1, slice_first = 0;  // the image and the output row the slice starts at
    for (i64 q = task * kRowsPerTask; q < q_end; ++q) {
      const i64 image = q / g.out_rows, oh = q % g.out_rows;
      const float* strip_of_row = strip.data();
      if (!slices) {
        fill_strip(g, st, xf, image, oh, strip.data());
      } else {
        if (image != slice_image) {
          fill_slice(g, st, xf, image, oh, std::min(q_end - q, g.out_rows - oh), strip.data());
          slice_image = image, slice_first = oh;
        }
        strip_of_row += (oh - slice_first) * g.stride_rows * st.row_floats;
      }
      float* yq = kWiden ? out_row.data() : reinterpret_cast<float*>(y + q * OW * K);
      // Pixels [ow0, ow0 + pixels) of the row in tiles of at most max_rows; the slide kernel takes
      // them in one call (a whole row where no prefetch runs between its tiles: fewer calls).
      const auto run = [&](i64 ow0, i64 pixels, i64 max_rows) {
        for (i64 col0 = 0; col0 < K; col0 += kColumnGroup) {
          const i64 n = std::min(kColumnGroup, K - col0);
          const float* xs = strip_of_row + ow0 * step;
          float* d = yq + ow0 * K + col0;
          if (step == 1 &&
              mk.slide(pixels, static_cast<int>(max_rows), n, len, xs, st.row_floats, KH, ff + col0, K, d, K, false))
            continue;
          equal_tiles(pixels, max_rows, [&](i64 o, i64 mr) {
            mk.grid(static_cast<int>(mr), n, xs + o * step, offsets, 1, st.row_floats, len, KH, ff + col0, K, d + o * K,
                    K, false);
          });
        }
      };
      if (!prefetch_rows) {
        run(0, OW, tile_rows);
      } else {
        equal_tiles(OW, tile_rows, [&](i64 ow0, i64 pixels) {
          if (ow0 + pixels < OW || q + 1 < rows)  // the next tile's output lines, within y
            prefetch_to_l2(yq + (ow0 + pixels) * K,
                           std::min(pixels, ow0 + pixels < OW ? OW - ow0 - pixels : OW) * K * 4);
          run(ow0, pixels, pixels);
        });
      }
      if (epilogue) apply_epilogue(*epilogue, yq, OW, K);
      if constexpr (kWiden) convert_from_float(out_row.data(), y + q * OW * K, OW * K);
    }
  });
}

// Whether a float32 y outgrows half the last-level cache (its rows are then prefetched).
bool outgrows_cache(const Conv2DGeometry& g) {
  return conv2d_sizes(g).output > cpu_info().l3_bytes / 2 / i64{sizeof(float)};
}

// The bfloat16 form on vdpbf16ps (see the top of the file).
void forward_strips_row_pairs(const Conv2DGeometry& g, const bfloat16* x, const bfloat16* f, bfloat16* y,
                              const ConvEpilogue* epilogue = nullptr) {
  const Bf16Kernels& bk = *bf16_kernels();
  const i64 K = g.out_depth, OW = g.out_cols, KH = g.filter_rows;
  const i64 len = g.filter_cols * g.in_depth, step = strip_pixel_step(g);
  const i64 row_pairs = (KH + 1) / 2, ldy = (K + 15) / 16 * 16;  // panel rows readable to whole vectors
  const Strips st = strips_of(g);
  const i64 rows = g.batch * g.out_rows;
  std::vector<std::uint32_t> panel(static_cast<std::size_t>(row_pairs * len * ldy), 0u);
  const auto* fb = reinterpret_cast<const std::uint16_t*>(f);  // f[kh][j][k], j < KW * C
  tbb::parallel_for(i64{0}, row_pairs * len, [&](i64 pj) {
    const i64 kh = pj / len * 2, j = pj % len;
    std::uint32_t* out = panel.data() + pj * ldy;
    for (i64 k = 0; k < K; ++k)
      out[k] = fb[(kh * len + j) * K + k] | (kh + 1 < KH ? std::uint32_t{fb[((kh + 1) * len + j) * K + k]} << 16 : 0u);
  });
  const i64 tile_rows = std::min<i64>(kMaxRows, bk.grid_max_rows(std::min(K, kColumnGroup)));
  long long offsets[kMaxRows];  // each pixel's window origin on the strip, from the tile's first
  for (i64 r = 0; r < tile_rows; ++r) offsets[r] = r * step;
  tbb::parallel_for(i64{0}, (rows + kRowsPerTask - 1) / kRowsPerTask, [&](i64 task) {
    std::vector<std::uint16_t> strip(static_cast<std::size_t>(2 * row_pairs * st.row_floats), 0);
    std::vector<std::uint32_t> words(static_cast<std::size_t>(row_pairs * st.row_floats));
    std::vector<float> out_row(static_cast<std::size_t>(OW * K));
    for (i64 q = task * kRowsPerTask; q < std::min(rows, (task + 1) * kRowsPerTask); ++q) {
      fill_strip(g, st, x, q / g.out_rows, q % g.out_rows, strip.data());  // row KH, if any, stays zero
      for (i64 i = 0; i < row_pairs; ++i) {
        const std::uint16_t* even = strip.data() + 2 * i * st.row_floats;
        const std::uint16_t* odd = even + st.row_floats;
        std::uint32_t* w = words.data() + i * st.row_floats;
        for (i64 v = 0; v < st.row_floats; ++v) w[v] = even[v] | std::uint32_t{odd[v]} << 16;
      }
      std::fill(out_row.begin(), out_row.end(), 0.0f);
      equal_tiles(OW, tile_rows, [&](i64 ow0, i64 pixels) {
        for (i64 col0 = 0; col0 < K; col0 += kColumnGroup)
          bk.grid(static_cast<int>(pixels), std::min(kColumnGroup, K - col0), words.data() + ow0 * step, offsets, 1,
                  st.row_floats, len, row_pairs, panel.data() + col0, ldy, out_row.data() + ow0 * K + col0, K);
      });
      if (epilogue) apply_epilogue(*epilogue, out_row.data(), OW, K);
      convert_from_float(out_row.data(), y + q * OW * K, OW * K);
    }
  });
}

// Whether bfloat16 runs on row pairs (vdpbf16ps) rather than widened.
bool bfloat16_row_pairs(const Conv2DGeometry& g) {
  return bf16_kernels() && g.filter_rows * g.filter_cols * g.in_depth >= kPairsFromWindow;
}

}  // namespace

template <class T>
void conv2d_forward_strips(const Conv2DGeometry& g, const T* x, const T* f, T* y) {
  if constexpr (std::is_same_v<T, bfloat16>) {
    if (bfloat16_row_pairs(g)) return forward_strips_row_pairs(g, x, f, y);
  }
  // half and bfloat16 compute into a float32 row in cache, narrowed to y afterwards.
  forward_strips(g, x, f, y, std::is_same_v<T, float> && outgrows_cache(g));
}

void conv2d_forward_strips_with(const Conv2DGeometry& g, const float* x, const float* f, float* y,
                                bool zero_rows_first) {
  forward_strips(g, x, f, y, zero_rows_first);
}

// The filter was scanned for Inf and NaN before (FilterIfPadded): no result to recompute.
template <class T>
bool conv2d_forward_strips_fused(const Conv2DGeometry& g, const T* x, const T* f, T* y, const ConvEpilogue& epilogue) {
  if constexpr (std::is_same_v<T, bfloat16>) {
    if (bfloat16_row_pairs(g)) {
      forward_strips_row_pairs(g, x, f, y, &epilogue);
      return true;
    }
  }
  forward_strips(g, x, f, y, std::is_same_v<T, float> && outgrows_cache(g), &epilogue);
  return true;
}

template void conv2d_forward_strips<half>(const Conv2DGeometry&, const half*, const half*, half*);
template void conv2d_forward_strips<bfloat16>(const Conv2DGeometry&, const bfloat16*, const bfloat16*, bfloat16*);
template void conv2d_forward_strips<float>(const Conv2DGeometry&, const float*, const float*, float*);
template bool conv2d_forward_strips_fused<bfloat16>(const Conv2DGeometry&, const bfloat16*, const bfloat16*, bfloat16*,
                                                    const ConvEpilogue&);
template bool conv2d_forward_strips_fused<float>(const Conv2DGeometry&, const float*, const float*, float*,
                                                 const ConvEpilogue&);

}  // namespace dagrad::cpu
