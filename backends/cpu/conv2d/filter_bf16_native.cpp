// Native bfloat16 NHWC filter gradient (groups = 1, any stride/dilation/padding) on the AVX-512
// BF16 kernels: df[t][c][k] = sum_p x_t[p][c] * dy[p][k] with pixels taken in pairs by vdpbf16ps,
// float32 accumulation, one round-to-nearest-even to bfloat16 at the end. No whole-tensor widening
// and no im2col: per task two small panels (pixel pairs x channels, pixel pairs x columns, 64 KiB)
// and the float32 partial filters of filter_reduction_chunks (as the float32 path) for the sums.
#include <algorithm>
#include <cstring>
#include <vector>

#include <tbb/parallel_for.h>

#include "dagrad/backends/cpu/bf16_kernels.hpp"
#include "dagrad/backends/cpu/conv2d/filter_pair_walk.hpp"
#include "dagrad/backends/cpu/conv2d/kernels.hpp"
#include "dagrad/backends/cpu/conv2d/tile_walk.hpp"
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

constexpr i64 kPixelBlock = 128;       // pixels per pass: 64 pairs
constexpr i64 kMaxChannelGroup = 128;  // channels per task at most: dy is packed once per group
constexpr i64 kColumnGroup = 128;      // filter columns per task: x is packed once per 128

// Channels per task: C in equal groups of at most kMaxChannelGroup. Each group packs every dy row
// it reads, so fewer groups pack less; measured on Zen 5 against groups of 48: 1.35x on 1x1
// 64 -> 256 and 56x56x64, 1.2-1.3x on 128 and 256 channels (both panels, 64 KiB, outgrow L1,
// yet the packing saved is worth more).
i64 channel_group(i64 C) {
  const i64 groups = (C + kMaxChannelGroup - 1) / kMaxChannelGroup;
  return (C + groups - 1) / groups;
}

// A task's two panels (pixel pairs x channels, pixel pairs x columns), in its visitor.
struct Panels {
  std::vector<u32> x, y;
  explicit Panels(i64 channels)
      : x(static_cast<std::size_t>(kPixelBlock / 2 * channels)),
        y(static_cast<std::size_t>(kPixelBlock / 2 * kColumnGroup)) {}
};

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
  const i64 C = g.in_depth, K = g.out_depth;
  const i64 cgroup = channel_group(C);
  filter_pair_walk<kPixelBlock>(g, x, dy, df, cgroup, kColumnGroup, [&](const PairWalkTask& task) {
    const i64 kpad = (task.kn + 15) / 16 * 16;
    return [&bk, task, kpad, C, K, p = Panels(cgroup)](i64 t, i64 m, const u16* const* xs, const u16* const* ys,
                                                       bool ys_changed) mutable {
      if (ys_changed) bk.pack_pairs(ys, task.k0, m, task.kn, p.y.data(), kpad);
      bk.pack_pairs(xs, task.c0, m, task.cn, p.x.data(), task.cn);
      float* dt = task.d + t * C * K;
      // Channel tiles of nearly equal height: 32 channels as 6 tiles of 5-6 rows, not 5 of 6 and a
      // 2-row tile, latency-bound on vdpbf16ps.
      equal_tiles(task.cn, kBf16MaxRows, [&](i64 c, i64 mr) {
        bk.pairs(static_cast<int>(mr), task.kn, p.x.data() + c, task.cn, p.y.data(), kpad, (m + 1) / 2,
                 dt + (task.c0 + c) * K + task.k0, K);
      });
    };
  });
}

}  // namespace dagrad::cpu
