// Fast float32 NHWC Conv2D and input gradient (any stride/dilation/padding, groups) as
// implicit GEMMs on the register-tiled micro-kernels of microkernels.hpp (the filter gradient is
// in filter_nhwc_fast.cpp). No im2col: tiles address input rows through small pointer lists (a
// shared zero row stands for the padding). Workspace: one zero row and the transposed filter for
// the input gradient.
#include <algorithm>
#include <vector>

#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include "dagrad/backends/cpu/conv2d/kernels.hpp"
#include "dagrad/backends/cpu/conv2d/tap_windows.hpp"
#include "dagrad/backends/cpu/conv2d/tile_walk.hpp"
#include "dagrad/backends/cpu/microkernels.hpp"

namespace dagrad::cpu {
namespace {

using ops::Conv2DGeometry;
using i64 = std::int64_t;

constexpr i64 kTilesPerTask = 8;  // pixel tiles per task in forward / input gradient, at least
// Tiles per task at most, and the multiply-adds a task should reach below it: where a tile is
// little work (1x1 filters over few channels), more tiles a task keep its setup (pointer lists,
// each pixel's position: three divisions) small beside it (1x1 64->256 on Zen 4: Conv2D 1.06x at
// 1 thread, 1.13x at 2; input gradient 1.06x at 1; the same bits: tasks only group pixels).
constexpr i64 kMaxTilesPerTask = 64;
constexpr i64 kTaskMultiplyAdds = i64{4} << 20;
// Channels (forward) or filters (input gradient) per pass over a task's tiles: 128 rather than 64
// halves the accumulators' loads and stores on 1x1 filters (input gradient 64->256 1.04x on Zen 4)
// and measured the same on 3x3 stride 2 up to 256 channels, whose panels then outgrow L2.
constexpr i64 kReduceBlock = 128;
constexpr i64 kColumnGroup = 256;  // output columns per task: whole rows up to 256 (128 ran 8-16% slower)

// The shared driver of the two "rows" ops: the pixels (tap_windows.hpp says where each reads,
// tap by tap) in register tiles; b holds each tap's len x cols matrix; pixel p's output row is
// out + p * out_stride, `cols` values.
struct TapMatrices {
  const float* data;
  i64 tap_stride, ldb;      // floats from one tap's matrix to the next, and between its rows
  bool transposed = false;  // stored cols x len instead (ldb between columns): the rows_t kernel
};
template <class Windows>
void rows_driver(i64 pixels, i64 len, i64 cols, TapMatrices b, const Windows& windows, float* out, i64 out_stride) {
  const MicroKernels& mk = micro_kernels();
  const i64 mr = mk.tile_rows, taps = windows.taps();
  const std::vector<float> zeros(static_cast<std::size_t>(len), 0.0f);
  const i64 tiles = (pixels + mr - 1) / mr;
  // A tile's multiply-adds: mr times the filter's elements (no overflow); four tasks a thread at least.
  const i64 tile_work = mr * std::max<i64>(len, 1) * std::max<i64>(taps, 1) * std::max<i64>(cols, 1);
  const i64 threads = tbb::this_task_arena::max_concurrency();
  const i64 per_task =
      std::clamp(std::min(kTaskMultiplyAdds / tile_work, tiles / (4 * threads)), kTilesPerTask, kMaxTilesPerTask);
  const i64 tile_groups = (tiles + per_task - 1) / per_task;
  const i64 col_groups = (cols + kColumnGroup - 1) / kColumnGroup;
  tbb::parallel_for(i64{0}, tile_groups * col_groups, [&](i64 task) {
    const i64 tg = task / col_groups, col0 = (task % col_groups) * kColumnGroup;
    const i64 ncols = std::min(kColumnGroup, cols - col0);
    const i64 tile0 = tg * per_task, tile1 = std::min(tiles, tile0 + per_task);
    // Per tile: the taps that touch at least one of its pixels, with each pixel's row.
    std::vector<const float*> a(static_cast<std::size_t>(per_task * taps * mr));
    std::vector<i64> tap_list(static_cast<std::size_t>(per_task * taps));
    std::vector<i64> tap_count(static_cast<std::size_t>(per_task));
    std::vector<float*> c(static_cast<std::size_t>(per_task * mr));
    for (i64 tile = tile0; tile < tile1; ++tile) {
      const i64 s = tile - tile0, p0 = tile * mr, rows = std::min(mr, pixels - p0);
      Window win[kMaxRows];
      windows.locate_run(p0, rows, win);
      for (i64 r = 0; r < rows; ++r) c[static_cast<std::size_t>(s * mr + r)] = out + win[r].pixel * out_stride;
      // Tile s owns taps * mr slots; its taps are `rows` pointers apart, as the kernel reads them.
      tap_count[static_cast<std::size_t>(s)] =
          tile_rows(windows, win, rows, zeros.data(), a.data() + s * taps * mr, tap_list.data() + s * taps);
    }
    const float* bt[kMaxTaps];
    for (i64 j0 = 0; j0 == 0 || j0 < len; j0 += kReduceBlock) {  // len 0 still writes zeros
      const i64 jn = std::min(kReduceBlock, len - j0);
      // Every output row is written once per pass, straight to memory, and the hardware
      // prefetcher does not keep up with six rows at once: the next tile's output rows go to L2
      // while this one computes (3x3 stride 2 128->128 on Zen 4: input gradient 1.06x, Conv2D
      // 1.03x). 1x1 filters also read each input row once, and their next rows go to L2 too (1x1
      // 64->256 on Zen 5: Conv2D 1.1x, input gradient 1.3x at 1 thread, 1.5x at 2). Their columns go in
      // slices of four vectors, all tiles of the task in turn, so that the slice of b stays in L1
      // and the output prefetches come a few at a time (all of a row at once, they filled the miss
      // buffers and stalled); the kernels split columns in fours anyway, so the bits are the same.
      // 1x1 64->256 on Zen 4: Conv2D 1.10x, input gradient 1.02x. 3x3 filters reuse rows from cache.
      const bool streamed = taps == 1;
      const i64 slice = streamed ? 4 * i64{mk.vector_width} : ncols;
      for (i64 q0 = col0; q0 < col0 + ncols; q0 += slice) {
        const i64 qn = std::min(slice, col0 + ncols - q0);
        for (i64 tile = tile0; tile < tile1; ++tile) {
          const i64 s = tile - tile0, rows = std::min(mr, pixels - tile * mr),
                    used = tap_count[static_cast<std::size_t>(s)];
          if (used == 0 && j0 > 0) continue;
          const i64 next_rows = tile + 1 < tile1 ? std::min(mr, pixels - (tile + 1) * mr) : 0;
          if (streamed && q0 == col0)
            for (i64 r = 0; r < next_rows; ++r)
              prefetch_to_l2(a[static_cast<std::size_t>((s + 1) * mr + r)] + j0, jn * 4);
          if (j0 == 0)
            for (i64 r = 0; r < next_rows; ++r)
              prefetch_to_l2(c[static_cast<std::size_t>((s + 1) * mr + r)] + q0, qn * 4);
          for (i64 t0 = 0; t0 < std::max<i64>(used, 1); t0 += kMaxTaps) {
            const i64 tn = std::min<i64>(kMaxTaps, used - t0);
            for (i64 t = 0; t < tn; ++t)
              bt[t] = b.data + tap_list[static_cast<std::size_t>(s * taps + t0 + t)] * b.tap_stride +
                      (b.transposed ? j0 + q0 * b.ldb : j0 * b.ldb + q0);
            (b.transposed ? mk.rows_t : mk.rows)(static_cast<int>(rows), qn, a.data() + s * taps * mr + t0 * rows, j0,
                                                 bt, tn, jn, b.ldb, c.data() + s * mr, q0, j0 > 0 || t0 > 0);
          }
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
  const i64 K = g.out_depth, cg = g.filter_in_depth, kg = g.out_depth_per_group();
  for (i64 group = 0; group < g.groups; ++group) {
    const TapMatrices filter{f + group * kg, cg * K, K};  // f is [tap][cg][K]
    rows_driver(g.batch * g.out_rows * g.out_cols, cg, kg, filter, ForwardWindows<float>(g, x, group * cg),
                y + group * kg, K);
  }
}

void conv2d_backprop_input_fast(const Conv2DGeometry& g, const float* f, const float* dy, float* dx) {
  const i64 C = g.in_depth, K = g.out_depth, H = g.in_rows, W = g.in_cols;
  const i64 cg = g.filter_in_depth, kg = g.out_depth_per_group();
  const i64 taps = g.filter_rows * g.filter_cols;
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
  // Input pixels go in stride-phase order (InputWindows).
  for (i64 group = 0; group < g.groups; ++group) {
    const TapMatrices filter = narrow ? TapMatrices{f + group * kg, cg * K, K, true}
                                      : TapMatrices{ft.data() + group * kg * cg, K * cg, cg};  // the group's k rows
    rows_driver(g.batch * H * W, kg, cg, filter, InputWindows<float>(g, dy, group * kg), dx + group * cg, C);
  }
}

}  // namespace dagrad::cpu
