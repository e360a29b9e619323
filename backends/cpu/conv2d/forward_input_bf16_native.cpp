// Native bfloat16 NHWC Conv2D and input gradient (groups = 1, any stride/dilation/padding) on the
// AVX-512 BF16 rows kernel: the reduction runs over channels (Conv2D) or filters (input gradient),
// which are contiguous in the activation rows, so those rows feed vdpbf16ps as they are, two
// elements a step; only the filter is packed, once per call, into pairs ([tap][pair][column],
// taps x ceil(len/2) x columns rounded up to 16 words). Each output is summed in float32 registers
// over all taps in one kernel call and rounded once, so results do not depend on threads. Pixels
// find their rows through tap_windows.hpp (the input gradient's in stride-phase order).
#include <algorithm>
#include <vector>

#include <tbb/parallel_for.h>

#include "dagrad/backends/cpu/bf16_kernels.hpp"
#include "dagrad/backends/cpu/conv2d/kernels.hpp"
#include "dagrad/backends/cpu/conv2d/tap_windows.hpp"
#include "dagrad/backends/cpu/conv2d/tile_walk.hpp"
#include "dagrad/backends/cpu/cpu_info.hpp"
#include "dagrad/core/allocator.hpp"

namespace dagrad::cpu {
namespace {

using ops::Conv2DGeometry;
using i64 = std::int64_t;
using u16 = std::uint16_t;
using u32 = std::uint32_t;

constexpr i64 kTilesPerTask = 8;  // pixel tiles of kBf16MaxRows per task

// Output columns per task: whole rows of up to 256 where the filter panels of that many columns,
// every tap's, fit half the L2 (1x1 64 -> 256: 1.1x faster than 128), else 128 (3x3 256 -> 256:
// 256 columns of 9 taps, 1.2 MiB, ran 16% slower). Measured on Zen 5.
i64 column_group(i64 taps, i64 len, i64 cols) {
  const double panel_bytes = static_cast<double>(taps) * static_cast<double>((len + 1) / 2) * 256.0 * 4.0;
  const bool wide = cols > 128 && panel_bytes <= static_cast<double>(cpu_info().l2_bytes) / 2;
  return wide ? 256 : 128;
}

const u16* bits(const bfloat16* p) { return reinterpret_cast<const u16*>(p); }
u16* bits(bfloat16* p) { return reinterpret_cast<u16*>(p); }

// out[p][0:cols] = sum_t sum_j row(p, t)[j] * panel[t][j][0:cols] for every pixel p, where the
// panel holds pairs of j (tap stride `tap_stride` words, row stride ldb) and tap_windows.hpp's
// windows give the row of `len` bfloat16 values pixel p reads through tap t.
template <class Windows>
void rows_driver(i64 pixels, i64 len, i64 cols, const u32* panel, i64 tap_stride, i64 ldb, u16* out,
                 const Windows& windows) {
  const Bf16Kernels& bk = *bf16_kernels();
  constexpr i64 mr = kBf16MaxRows;
  const i64 taps = windows.taps();
  const std::vector<u16> zeros(static_cast<std::size_t>(len + 2), 0);
  const i64 tiles = (pixels + mr - 1) / mr;
  const i64 tile_groups = (tiles + kTilesPerTask - 1) / kTilesPerTask;
  const i64 group = column_group(taps, len, cols), col_groups = (cols + group - 1) / group;
  tbb::parallel_for(i64{0}, tile_groups * col_groups, [&](i64 task) {
    const i64 tg = task / col_groups, col0 = (task % col_groups) * group;
    const i64 ncols = std::min(group, cols - col0);
    std::vector<const u32*> b(static_cast<std::size_t>(taps));  // the used taps' panels
    // Tiles in a pipeline of two: the next tile's rows are located before this tile's kernel runs,
    // and for 1x1 filters prefetched to L2: there each row is read once, straight from memory, and
    // the hardware prefetcher does not keep up with six rows at once (bf16 1x1 64->256 on Zen 5:
    // input gradient 1.2x, Conv2D 1.1x faster; 3x3 filters reuse their rows from cache, and
    // prefetching all nine taps' rows cost 7% there).
    struct Tile {
      i64 rows = 0, used = 0;
      std::vector<const u16*> a;
      std::vector<i64> taps;
      u16* c[mr];
    };
    Tile now, next;
    for (Tile* t : {&now, &next}) {
      t->a.resize(static_cast<std::size_t>(taps * mr));
      t->taps.resize(static_cast<std::size_t>(taps));
    }
    const auto prepare = [&](i64 tile, Tile& t) {
      const i64 p0 = tile * mr;
      t.rows = std::min(mr, pixels - p0);
      Window win[mr];
      windows.locate_run(p0, t.rows, win);
      for (i64 r = 0; r < t.rows; ++r) t.c[r] = out + win[r].pixel * cols;
      t.used = tile_rows(windows, win, t.rows, zeros.data(), t.a.data(), t.taps.data());
    };
    const i64 tile1 = std::min(tiles, (tg + 1) * kTilesPerTask);
    prepare(tg * kTilesPerTask, now);
    for (i64 tile = tg * kTilesPerTask; tile < tile1; ++tile) {
      if (tile + 1 < tile1) {
        prepare(tile + 1, next);
        for (i64 i = 0; taps == 1 && i < next.used * next.rows; ++i)
          prefetch_to_l2(next.a[static_cast<std::size_t>(i)], len * i64{sizeof(u16)});
        // Its output rows too, written once, whatever the filter (as the float32 rows driver;
        // 3x3 stride 2 128->128 input gradient 1.07x on Zen 4).
        for (i64 r = 0; r < next.rows; ++r) prefetch_to_l2(next.c[r] + col0, ncols * i64{sizeof(u16)});
      }
      if (now.used == 0) {  // all padding: the outputs are zero
        for (i64 r = 0; r < now.rows; ++r) std::fill_n(now.c[r] + col0, ncols, u16{0});
      } else {
        for (i64 u = 0; u < now.used; ++u) b[u] = panel + now.taps[static_cast<std::size_t>(u)] * tap_stride;
        bk.rows(static_cast<int>(now.rows), ncols, now.a.data(), 0, b.data(), col0, now.used, len, ldb, now.c, col0);
      }
      std::swap(now, next);
    }
  });
}

}  // namespace

void conv2d_forward_bf16(const Conv2DGeometry& g, const bfloat16* x, const bfloat16* f, bfloat16* y) {
  const Bf16Kernels& bk = *bf16_kernels();
  const i64 C = g.in_depth, K = g.out_depth, taps = g.filter_rows * g.filter_cols;
  const i64 ldb = (K + 15) / 16 * 16, tap_stride = (C + 1) / 2 * ldb;
  // The filter [tap][c][k] as pairs of channels: panel[t][c/2][k] = {f[t][c][k], f[t][c+1][k]}.
  Buffer panel_buffer(host_allocator(), static_cast<std::size_t>(std::max<i64>(taps * tap_stride, 1)) * sizeof(u32));
  u32* panel = static_cast<u32*>(panel_buffer.data());
  tbb::parallel_for(i64{0}, taps, [&](i64 t) {
    std::vector<const u16*> rows(static_cast<std::size_t>(C));
    for (i64 c = 0; c < C; ++c) rows[static_cast<std::size_t>(c)] = bits(f) + (t * C + c) * K;
    bk.pack_pairs(rows.data(), 0, C, K, panel + t * tap_stride, ldb);
  });
  rows_driver(g.batch * g.out_rows * g.out_cols, C, K, panel, tap_stride, ldb, bits(y),
              ForwardWindows<u16>(g, bits(x), 0));
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
  rows_driver(g.batch * g.in_rows * g.in_cols, K, C, panel, tap_stride, ldb, bits(dx),
              InputWindows<u16>(g, bits(dy), 0));
}

}  // namespace dagrad::cpu
