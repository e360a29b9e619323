// The walk the pair-panel bfloat16 filter gradients share (AVX-512 BF16: filter_bf16_native.cpp;
// AMX tiles: filter_amx.cpp), df[t][c][k] = sum_p x_t[p][c] * dy[p][k]:
// - the reduction over output pixels is split into filter_reduction_chunks chunks of whole output
//   rows, each summed into its own float32 partial filter, the partials then summed in chunk order
//   and rounded once: the bits do not depend on the thread count;
// - a task owns one chunk and a block of channels x filters; it takes its pixels in blocks, and
//   per block and tap gathers the pixels that read the tap: those in the padding are skipped, or,
//   where little of the work is padding (conv2d_filter_keeps_padding), kept with zero x (nullptr
//   rows) so that every tap takes the same pixels and dy is packed once per block, not per tap.
// make_visitor(task) gives the task's visitor (its panels live there), called as
// visit(t, m, xs, ys, ys_changed) with the block's m pixels for tap t: their x rows (nullptr in the
// padding) and dy rows, and whether those dy rows differ from the last call's.
#pragma once

#include <algorithm>
#include <cstdint>

#include <tbb/parallel_for.h>

#include "dagrad/backends/cpu/conv2d/kernels.hpp"
#include "dagrad/backends/cpu/conv2d/reduction_partials.hpp"
#include "dagrad/backends/cpu/conv2d/tile_walk.hpp"

namespace dagrad::cpu {

struct PairWalkTask {
  std::int64_t c0, cn, k0, kn;  // the task's channels and filters
  float* d;                     // its chunk's float32 partial filter, [tap][C][K]; its block zeroed
};

template <std::int64_t kPixelBlock, class MakeVisitor>
void filter_pair_walk(const ops::Conv2DGeometry& g, const bfloat16* x, const bfloat16* dy, bfloat16* df,
                      std::int64_t channel_group, std::int64_t column_group, const MakeVisitor& make_visitor) {
  using i64 = std::int64_t;
  using u16 = std::uint16_t;
  const i64 C = g.in_depth, K = g.out_depth, H = g.in_rows, W = g.in_cols;
  const i64 taps = g.filter_rows * g.filter_cols, fsize = taps * C * K;
  const i64 cgroups = (C + channel_group - 1) / channel_group, kgroups = (K + column_group - 1) / column_group;
  const i64 per_chunk = cgroups * kgroups;
  const i64 rows = g.batch * g.out_rows;
  const i64 chunks = filter_reduction_chunks(rows, per_chunk, fsize * 4);
  const ReductionPartials<float> partial(chunks, fsize);
  const i64 per_image = g.out_rows * g.out_cols;
  const bool keep_padding = conv2d_filter_keeps_padding(g);
  const u16* xb = reinterpret_cast<const u16*>(x);
  const u16* dyb = reinterpret_cast<const u16*>(dy);
  tbb::parallel_for(i64{0}, chunks * per_chunk, [&](i64 index) {
    const i64 chunk = index / per_chunk, cgi = index % per_chunk / kgroups, kgi = index % kgroups;
    PairWalkTask task{cgi * channel_group, 0, kgi * column_group, 0, partial.chunk(chunk)};
    task.cn = std::min(channel_group, C - task.c0);
    task.kn = std::min(column_group, K - task.k0);
    for (i64 t = 0; t < taps; ++t)
      for (i64 c = task.c0; c < task.c0 + task.cn; ++c) std::fill_n(task.d + (t * C + c) * K + task.k0, task.kn, 0.0f);
    auto visit = make_visitor(task);
    const u16* xs[kPixelBlock];
    const u16* ys[kPixelBlock];
    const u16* last_ys[kPixelBlock];  // the dy rows of the last visit
    i64 last_m = -1;
    // Chunk boundaries fall on whole output rows, as filter_reduction_chunks assumed.
    const i64 p_end = rows * (chunk + 1) / chunks * g.out_cols;
    i64 ih0[kPixelBlock], iw0[kPixelBlock], image[kPixelBlock];  // per pixel of the block
    for (i64 pb = rows * chunk / chunks * g.out_cols; pb < p_end; pb += kPixelBlock) {
      const i64 pn = std::min(p_end - pb, kPixelBlock);
      // 1x1 filters read each dy row once, straight from memory: the next block's rows go to L2
      // while this one is packed and multiplied (bf16 1x1 64->256 on Zen 5: 1.07x at 1 thread,
      // 1.14x at 2).
      if (taps == 1) {
        const i64 qn = std::min(p_end - pb - pn, kPixelBlock);
        for (i64 i = 0; i < qn; ++i) prefetch_to_l2(dyb + (pb + pn + i) * K + task.k0, task.kn * i64{sizeof(u16)});
      }
      // Window origins once per block (the divisions cost as much as a tap's products otherwise).
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
          xs[m] = inside ? xb + ((image[i] + ih) * W + iw) * C : nullptr;
          ys[m++] = dyb + (pb + i) * K;
        }
        if (m == 0) continue;
        const bool ys_changed = m != last_m || !std::equal(ys, ys + m, last_ys);
        if (ys_changed) {
          std::copy(ys, ys + m, last_ys);
          last_m = m;
        }
        visit(t, m, xs, ys, ys_changed);
      }
    }
  });
  partial.sum_to(df);  // in chunk order, then rounded once
}

}  // namespace dagrad::cpu
