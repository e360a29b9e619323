// bfloat16 NHWC filter gradient (groups = 1, any stride/dilation/padding) on AMX-BF16 tiles:
// df[t][c][k] = sum_p x_t[p][c] * dy[p][k] as tile products of x_t transposed (channels x pixel
// pairs) by dy (pixel pairs x filters), float32 accumulation in the tiles and in the partial filters
// of filter_reduction_chunks (so the bits do not depend on the thread count), one rounding to
// bfloat16 at the end. The walk is filter_pair_walk.hpp's; per task: a dy panel (128 pairs x 128
// filters) and an x panel (32 channels x 128 pairs), both zero-padded to whole tile steps.
#include <algorithm>
#include <cstdint>
#include <vector>

#include <tbb/parallel_for.h>

#include "dagrad/backends/cpu/amx_kernels.hpp"
#include "dagrad/backends/cpu/conv2d/filter_pair_walk.hpp"
#include "dagrad/backends/cpu/conv2d/kernels.hpp"

namespace dagrad::cpu {
namespace {

using ops::Conv2DGeometry;
using i64 = std::int64_t;
using u16 = std::uint16_t;
using u32 = std::uint32_t;

constexpr i64 kPixelBlock = 256;            // pixels per pass: 128 pairs, 8 tile steps
constexpr i64 kChannelGroup = kAmxMaxRows;  // channels per task: the rows of one product
constexpr i64 kColumnGroup = 128;           // filters per task: four products share one x panel

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
  const i64 C = g.in_depth, K = g.out_depth;
  filter_pair_walk<kPixelBlock>(g, x, dy, df, kChannelGroup, kColumnGroup, [&](const PairWalkTask& task) {
    const i64 kpad = (task.kn + 15) / 16 * 16;
    return [&tiles, task, kpad, C, K, xpanel = std::vector<u16>(static_cast<std::size_t>(kChannelGroup * kPixelBlock)),
            ypanel = std::vector<u32>(static_cast<std::size_t>(kPixelBlock / 2 * kColumnGroup))](
               i64 t, i64 m, const u16* const* xs, const u16* const* ys, bool ys_changed) mutable {
      const i64 npairs = ((m + 1) / 2 + kAmxPairStep - 1) / kAmxPairStep * kAmxPairStep;
      if (ys_changed) pack_pair_rows(ys, task.k0, m, task.kn, npairs, ypanel.data(), kpad);
      pack_pixel_columns(xs, task.c0, m, task.cn, npairs, xpanel.data(), 2 * npairs);
      float* dt = task.d + (t * C + task.c0) * K + task.k0;
      AmxOperands operands[kPixelBlock / 2 / kAmxPairStep];  // one batch: the tile steps of a block
      const i64 steps = npairs / kAmxPairStep;
      for (i64 j = 0; j < task.kn; j += kAmxMaxCols) {
        for (i64 i = 0; i < steps; ++i)
          operands[i] = {xpanel.data() + i * 2 * kAmxPairStep, 2 * npairs, ypanel.data() + i * kAmxPairStep * kpad + j};
        tiles.batch(task.cn, std::min<i64>(kAmxMaxCols, task.kn - j), operands, steps, kpad, dt + j, K);
      }
    };
  });
}

}  // namespace dagrad::cpu
