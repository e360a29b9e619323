// bfloat16 NHWC filter gradient (groups = 1, any stride/dilation/padding) on AMX-BF16 tiles:
// df[t][c][k] = sum_p x_t[p][c] * dy[p][k] as tile products of x_t transposed (channels x pixel
// pairs) by dy (pixel pairs x filters), float32 accumulation in the tiles and in the partial filters
// of filter_reduction_chunks (so the bits do not depend on the thread count), one rounding to
// bfloat16 at the end. The walk is filter_bf16_native.cpp's: blocks of pixels, the pixels of each
// tap (padding skipped, or kept with zero x where it is little work), dy packed once per block
// where the pixels do not change. Per task: a dy panel (128 pairs x 128 filters) and an x panel
// (32 channels x 128 pairs), both zero-padded to whole tile steps.
#include <algorithm>
#include <cstdint>
#include <vector>

#include <tbb/parallel_for.h>

#include "dagrad/backends/cpu/amx_kernels.hpp"
#include "dagrad/backends/cpu/conv2d/kernels.hpp"
#include "dagrad/backends/cpu/conv2d/reduction_partials.hpp"

namespace dagrad::cpu {
namespace {

using ops::Conv2DGeometry;
using i64 = std::int64_t;
using u16 = std::uint16_t;
using u32 = std::uint32_t;

constexpr i64 kPixelBlock = 256;            // pixels per pass: 128 pairs, 8 tile steps
constexpr i64 kChannelGroup = kAmxMaxRows;  // channels per task: the rows of one product
constexpr i64 kColumnGroup = 128;           // filters per task: four products share one x panel

const u16* bits(const bfloat16* p) { return reinterpret_cast<const u16*>(p); }
u32 pair(const u16* lo, const u16* hi, i64 i) { return u32{lo ? lo[i] : u16{0}} | u32{hi ? hi[i] : u16{0}} << 16; }

// The pixels 2q and 2q + 1 of `rows` (m of them; nullptr rows and those past m read as zero).
struct PixelPair {
  const u16 *lo, *hi;
};
PixelPair pixel_pair(const u16* const* rows, i64 m, i64 q) {
  return {2 * q < m ? rows[2 * q] : nullptr, 2 * q + 1 < m ? rows[2 * q + 1] : nullptr};
}

// The right operand: out[q * ld + j] = {ys[2q][off + j], ys[2q + 1][off + j]}, j < n, q < npairs;
// columns n..ld zero.
void pack_pair_rows(const u16* const* ys, i64 off, i64 m, i64 n, i64 npairs, u32* out, i64 ld) {
  for (i64 q = 0; q < npairs; ++q) {
    const PixelPair p = pixel_pair(ys, m, q);
    u32* row = out + q * ld;
    for (i64 j = 0; j < n; ++j) row[j] = pair(p.lo, p.hi, off + j);
    std::fill(row + n, row + ld, u32{0});
  }
}

// The left operand, transposed: out[c * ld + i] = xs[i][off + c] for c < n, i < 2 * npairs (pixel
// pairs side by side, as a tile row reads them; nullptr rows and those past m are zero).
void pack_pixel_columns(const u16* const* xs, i64 off, i64 m, i64 n, i64 npairs, u16* out, i64 ld) {
  for (i64 i = 0; i < 2 * npairs; ++i) {
    const u16* row = i < m ? xs[i] : nullptr;
    for (i64 c = 0; c < n; ++c) out[c * ld + i] = row ? row[off + c] : u16{0};
  }
}

}  // namespace

bool conv2d_amx_available() { return amx_kernels() != nullptr; }

void conv2d_backprop_filter_amx(const Conv2DGeometry& g, const bfloat16* x, const bfloat16* dy, bfloat16* df) {
  conv2d_backprop_filter_amx_with(g, x, dy, df, *amx_kernels());
}

void conv2d_backprop_filter_amx_with(const Conv2DGeometry& g, const bfloat16* x, const bfloat16* dy, bfloat16* df,
                                     const AmxKernels& tiles) {
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
    const i64 chunk = task / per_chunk, cgi = task % per_chunk / kgroups, kgi = task % kgroups;
    const i64 c0 = cgi * kChannelGroup, cn = std::min(kChannelGroup, C - c0);
    const i64 k0 = kgi * kColumnGroup, kn = std::min(kColumnGroup, K - k0), kpad = (kn + 15) / 16 * 16;
    float* d = partial.chunk(chunk);
    for (i64 t = 0; t < taps; ++t)
      for (i64 c = c0; c < c0 + cn; ++c) std::fill_n(d + (t * C + c) * K + k0, kn, 0.0f);
    std::vector<u16> xpanel(static_cast<std::size_t>(kChannelGroup * kPixelBlock));
    std::vector<u32> ypanel(static_cast<std::size_t>(kPixelBlock / 2 * kColumnGroup));
    const u16* xs[kPixelBlock];
    const u16* ys[kPixelBlock];
    const u16* packed_ys[kPixelBlock];  // the pixels ypanel holds now, to skip repacking it
    i64 packed_m = -1;
    AmxOperands operands[kPixelBlock / 2 / kAmxPairStep];  // one batch: the tile steps of a block
    // Chunk boundaries fall on whole output rows, as filter_reduction_chunks assumed.
    const i64 p_end = rows * (chunk + 1) / chunks * g.out_cols;
    i64 ih0[kPixelBlock], iw0[kPixelBlock], image[kPixelBlock];  // per pixel of the block
    for (i64 pb = rows * chunk / chunks * g.out_cols; pb < p_end; pb += kPixelBlock) {
      const i64 pn = std::min(p_end - pb, kPixelBlock);
      for (i64 i = 0; i < pn; ++i) {
        const i64 p = pb + i, n = p / per_image, oh = p % per_image / g.out_cols, ow = p % g.out_cols;
        ih0[i] = oh * g.stride_rows - g.pad_top;
        iw0[i] = ow * g.stride_cols - g.pad_left;
        image[i] = n * H;
      }
      for (i64 t = 0; t < taps; ++t) {
        const i64 dh = t / g.filter_cols * g.dilation_rows, dw = t % g.filter_cols * g.dilation_cols;
        i64 m = 0;
        for (i64 i = 0; i < pn; ++i) {
          const i64 ih = ih0[i] + dh, iw = iw0[i] + dw;
          const bool inside = ih >= 0 && ih < H && iw >= 0 && iw < W;
          if (!inside && !keep_padding) continue;
          xs[m] = inside ? bits(x) + ((image[i] + ih) * W + iw) * C : nullptr;
          ys[m++] = bits(dy) + (pb + i) * K;
        }
        if (m == 0) continue;
        const i64 npairs = ((m + 1) / 2 + kAmxPairStep - 1) / kAmxPairStep * kAmxPairStep;
        if (m != packed_m || !std::equal(ys, ys + m, packed_ys)) {
          pack_pair_rows(ys, k0, m, kn, npairs, ypanel.data(), kpad);
          std::copy(ys, ys + m, packed_ys);
          packed_m = m;
        }
        pack_pixel_columns(xs, c0, m, cn, npairs, xpanel.data(), 2 * npairs);
        float* dt = d + (t * C + c0) * K + k0;
        const i64 steps = npairs / kAmxPairStep;
        for (i64 j = 0; j < kn; j += kAmxMaxCols) {
          for (i64 i = 0; i < steps; ++i)
            operands[i] = {xpanel.data() + i * 2 * kAmxPairStep, 2 * npairs,
                           ypanel.data() + i * kAmxPairStep * kpad + j};
          tiles.batch(cn, std::min<i64>(kAmxMaxCols, kn - j), operands, steps, kpad, dt + j, K);
        }
      }
    }
  });
  partial.sum_to(df);  // in chunk order, then rounded once
}

}  // namespace dagrad::cpu
