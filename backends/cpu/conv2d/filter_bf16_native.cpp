// Native bfloat16 NHWC filter gradient (groups = 1, any stride/dilation/padding) on the AVX-512
// BF16 kernels: df[t][c][k] = sum_p x_t[p][c] * dy[p][k] with pixels taken in pairs by vdpbf16ps,
// float32 accumulation, one round-to-nearest-even to bfloat16 at the end. No whole-tensor widening
// and no im2col: per task two small panels (pixel pairs x channels, pixel pairs x columns, 44 KiB)
// and the float32 partial filters of filter_reduction_chunks (as the float32 path) for the sums.
#include <algorithm>
#include <cstring>

#include <tbb/parallel_for.h>

#include "dagrad/backends/cpu/bf16_kernels.hpp"
#include "dagrad/backends/cpu/conv2d/kernels.hpp"
#include "dagrad/backends/cpu/conv2d/reduction_partials.hpp"
#include "dagrad/backends/cpu/cpu_info.hpp"

namespace dagrad::cpu {
#if defined(__x86_64__)
namespace avx512bf16 {
extern const Bf16Kernels kernels;
}
#endif

const Bf16Kernels* bf16_kernels() {
#if defined(__x86_64__)
  return cpu_info().avx512_bf16 ? &avx512bf16::kernels : nullptr;
#else
  return nullptr;
#endif
}

bool conv2d_bf16_native_available() { return bf16_kernels() != nullptr; }

namespace {

using ops::Conv2DGeometry;
using i64 = std::int64_t;
using u16 = std::uint16_t;
using u32 = std::uint32_t;

constexpr i64 kPixelBlock = 128;                 // pixels per pass: 64 pairs, panels stay in L1
constexpr i64 kChannelGroup = 8 * kBf16MaxRows;  // channels per task (8 register tiles)
constexpr i64 kColumnGroup = 128;                // filter columns per task: x is packed once per 128

const u16* bits(const bfloat16* p) { return reinterpret_cast<const u16*>(p); }

// The share of the filter gradient's (pixel, tap) pairs whose tap is in the padding (the pairs
// inside counted in closed form, the totals in double: no product of sizes can wrap).
double padded_work_fraction(const Conv2DGeometry& g) {
  const double rows = static_cast<double>(
      ops::conv_real_tap_pairs(g.out_rows, g.stride_rows, g.dilation_rows, g.pad_top, g.in_rows, g.filter_rows));
  const double cols = static_cast<double>(
      ops::conv_real_tap_pairs(g.out_cols, g.stride_cols, g.dilation_cols, g.pad_left, g.in_cols, g.filter_cols));
  const double all = static_cast<double>(g.out_rows) * static_cast<double>(g.filter_rows) *
                     static_cast<double>(g.out_cols) * static_cast<double>(g.filter_cols);
  return 1.0 - rows * cols / all;
}

}  // namespace

// Above 5% of (pixel, tap) pairs in the padding, computing them with zero x costs more than
// packing dy once per tap (measured: 14x14 3x3 SAME is 9%, 56x56 2%).
bool conv2d_filter_keeps_padding(const Conv2DGeometry& g) { return padded_work_fraction(g) <= 0.05; }

void conv2d_backprop_filter_bf16(const Conv2DGeometry& g, const bfloat16* x, const bfloat16* dy, bfloat16* df) {
  const Bf16Kernels& bk = *bf16_kernels();
  const i64 C = g.in_depth, K = g.out_depth, H = g.in_rows, W = g.in_cols;
  const i64 taps = g.filter_rows * g.filter_cols, fsize = taps * C * K;
  const i64 cgroups = (C + kChannelGroup - 1) / kChannelGroup, kgroups = (K + kColumnGroup - 1) / kColumnGroup;
  const i64 per_chunk = cgroups * kgroups;
  const i64 rows = g.batch * g.out_rows;
  const i64 chunks = filter_reduction_chunks(rows, per_chunk, fsize * 4);
  const ReductionPartials<float> partial(chunks, fsize);  // float32 partial filters, one per chunk
  const i64 per_image = g.out_rows * g.out_cols;
  const bool keep_padding = conv2d_filter_keeps_padding(g);
  tbb::parallel_for(i64{0}, chunks * per_chunk, [&](i64 task) {
    const i64 chunk = task / per_chunk, cg = task % per_chunk / kgroups, kgi = task % kgroups;
    const i64 c0 = cg * kChannelGroup, cn = std::min(kChannelGroup, C - c0);
    const i64 k0 = kgi * kColumnGroup, kn = std::min(kColumnGroup, K - k0), kpad = (kn + 15) / 16 * 16;
    float* d = partial.chunk(chunk);
    for (i64 t = 0; t < taps; ++t)
      for (i64 c = c0; c < c0 + cn; ++c) std::fill_n(d + (t * C + c) * K + k0, kn, 0.0f);
    alignas(64) u32 xpanel[kPixelBlock / 2 * kChannelGroup];
    alignas(64) u32 ypanel[kPixelBlock / 2 * kColumnGroup];
    const u16* xs[kPixelBlock];
    const u16* ys[kPixelBlock];
    const u16* packed_ys[kPixelBlock];  // the pixels ypanel holds now, to skip repacking it
    i64 packed_m = -1;
    // Chunk boundaries fall on whole output rows, as filter_reduction_chunks assumed.
    const i64 p_end = rows * (chunk + 1) / chunks * g.out_cols;
    i64 ih0[kPixelBlock], iw0[kPixelBlock], image[kPixelBlock];  // per pixel of the block
    for (i64 pb = rows * chunk / chunks * g.out_cols; pb < p_end; pb += kPixelBlock) {
      const i64 pn = std::min(p_end - pb, kPixelBlock);
      // Window origins once per block (the divisions cost as much as a tap's products otherwise).
      for (i64 i = 0; i < pn; ++i) {
        const i64 p = pb + i, n = p / per_image, oh = p % per_image / g.out_cols, ow = p % g.out_cols;
        ih0[i] = oh * g.stride_rows - g.pad_top;
        iw0[i] = ow * g.stride_cols - g.pad_left;
        image[i] = n * H;
      }
      for (i64 t = 0; t < taps; ++t) {
        const i64 dh = t / g.filter_cols * g.dilation_rows, dw = t % g.filter_cols * g.dilation_cols;
        // The pixels of this block that read tap t: those in the padding are skipped, or, where
        // little of the work is padding, kept with zero x (nullptr rows) so that every tap takes
        // the same pixels and the dy panel is packed once per block, not once per tap.
        i64 m = 0;
        for (i64 i = 0; i < pn; ++i) {
          const i64 ih = ih0[i] + dh, iw = iw0[i] + dw;
          const bool inside = ih >= 0 && ih < H && iw >= 0 && iw < W;
          if (!inside && !keep_padding) continue;
          xs[m] = inside ? bits(x) + ((image[i] + ih) * W + iw) * C : nullptr;
          ys[m++] = bits(dy) + (pb + i) * K;
        }
        if (m == 0) continue;
        if (m != packed_m || !std::equal(ys, ys + m, packed_ys)) {
          bk.pack_pairs(ys, k0, m, kn, ypanel, kpad);
          std::copy(ys, ys + m, packed_ys);
          packed_m = m;
        }
        bk.pack_pairs(xs, c0, m, cn, xpanel, cn);
        float* dt = d + t * C * K;
        for (i64 c = 0; c < cn; c += kBf16MaxRows) {
          const int mr = static_cast<int>(std::min<i64>(kBf16MaxRows, cn - c));
          bk.pairs(mr, kn, xpanel + c, cn, ypanel, kpad, (m + 1) / 2, dt + (c0 + c) * K + k0, K);
        }
      }
    }
  });
  partial.sum_to(df);  // in chunk order, then rounded once
}

}  // namespace dagrad::cpu
