// gemm (gemm.hpp): the task split, the column sweep and the reduction blocks.
#include "dagrad/backends/cpu/gemm.hpp"

#include <algorithm>

#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include "dagrad/backends/cpu/conv2d/int_division.hpp"
#include "dagrad/backends/cpu/conv2d/tile_walk.hpp"
#include "dagrad/backends/cpu/microkernels.hpp"

namespace dagrad::cpu {
namespace {

using i64 = std::int64_t;

constexpr i64 kColumns = 64;  // columns per micro-kernel call: 4 vectors on AVX-512
constexpr i64 kReduce = 128;  // rows of B per block: 64 x 128 floats (32 KiB) stay in L1
// Rows a page apart or more: half as many, so that the block stays in L1 beside the next one
// coming in (NCHW 1x1 input gradient 1.04x on Zen 4; MatMul's 32x3136 by 3136x128 ran 1.07x
// slower with 64). Each sum adds its terms in order whatever the blocks: the same bits.
constexpr i64 kReduceFar = 64;
constexpr i64 kGroupTiles = 8;  // row tiles per task: B's block is read from L1 by each
constexpr i64 kTasksPerThread = 4;
constexpr i64 kPageFloats = 1024;  // 4 KiB

}  // namespace

void gemm(const GemmCall& g) {
  if (g.m <= 0 || g.n <= 0 || g.batch <= 0) return;
  const MicroKernels& mk = micro_kernels();
  const i64 group_rows = kGroupTiles * mk.tile_rows, groups = ceil_div(g.m, group_rows);
  // Column blocks of whole 64-column chunks, enough of them for every thread to have a few tasks;
  // long ones otherwise, so that each output row is written front to back.
  const i64 chunks = ceil_div(g.n, kColumns);
  const i64 threads = tbb::this_task_arena::max_concurrency();
  const i64 blocks = std::clamp<i64>(ceil_div(kTasksPerThread * threads, g.batch * groups), 1, chunks);
  const i64 block_cols = ceil_div(chunks, blocks) * kColumns;
  const i64 col_blocks = ceil_div(g.n, block_cols);
  tbb::parallel_for(i64{0}, g.batch * groups * col_blocks, [&](i64 task) {
    const i64 image = task / (groups * col_blocks), group = task / col_blocks % groups;
    const i64 g0 = group * group_rows, g1 = std::min(g.m, g0 + group_rows);
    const i64 col_begin = task % col_blocks * block_cols, col_end = std::min(g.n, col_begin + block_cols);
    const float* b = g.b + image * g.b_stride;
    float* c = g.c + image * g.c_stride;
    const float* a_rows[kMaxRows];
    float* c_rows[kMaxRows];
    const i64 tiles = ceil_div(g1 - g0, i64{mk.tile_rows});
    // Rows a page apart or more (below that the hardware prefetcher keeps up: MatMul's 32x3136
    // by 3136x128 ran 1.1x slower with the prefetches).
    const bool prefetch = std::min(g.ldb, g.ldc) >= kPageFloats;
    const i64 reduce = prefetch ? kReduceFar : kReduce;
    for (i64 p0 = col_begin; p0 < col_end; p0 += kColumns) {
      const i64 np = std::min(kColumns, col_end - p0);
      for (i64 l0 = 0; l0 < g.k; l0 += reduce) {
        const float* b_block = b + l0 * g.ldb + p0;
        // The block after this one (the next rows of B for these columns, or the next columns).
        const bool last_rows = l0 + reduce >= g.k;
        const i64 next_p0 = last_rows ? p0 + kColumns : p0, next_l0 = last_rows ? 0 : l0 + reduce;
        const bool next_block = next_p0 < col_end;
        const i64 next_np = next_block ? std::min(kColumns, col_end - next_p0) : 0;
        const i64 next_kn = next_block ? std::min(reduce, g.k - next_l0) : 0;
        const i64 b_share = prefetch ? ceil_div(next_kn, tiles) : 0;
        for (i64 tile = 0; tile < tiles; ++tile) {
          const i64 m0 = g0 + tile * mk.tile_rows, rows = std::min<i64>(mk.tile_rows, g1 - m0);
          for (i64 r = 0; r < rows; ++r) {
            a_rows[r] = g.a + (m0 + r) * g.lda;
            c_rows[r] = c + (m0 + r) * g.ldc;
          }
          // Where rows lie pages apart (NCHW 1x1 convolutions on images of 1024 pixels and more),
          // out of the hardware prefetcher's reach, what the next calls read from memory goes to L2
          // while this one computes, where the misses stalled (the first block also writes C's
          // lines fresh): 56x56 64->256 on Zen 4, Conv2D 1.46x, input gradient 1.30x. The next
          // block's rows of B, a share a tile...
          for (i64 r = tile * b_share; r < std::min(next_kn, (tile + 1) * b_share); ++r)
            prefetch_to_l2(b + (next_l0 + r) * g.ldb + next_p0, next_np * i64{sizeof(float)});
          // ... and the next tile's rows of C where its block is the first.
          const bool next_tile_here = tile + 1 < tiles;
          if (prefetch && (next_tile_here ? l0 == 0 : next_block && next_l0 == 0)) {
            const i64 r0 = next_tile_here ? m0 + rows : g0, cp = next_tile_here ? p0 : next_p0;
            for (i64 r = r0; r < std::min(g1, r0 + mk.tile_rows); ++r)
              prefetch_to_l2(c + r * g.ldc + cp, (next_tile_here ? np : next_np) * i64{sizeof(float)});
          }
          mk.rows(static_cast<int>(rows), np, a_rows, l0, &b_block, 1, std::min(reduce, g.k - l0), g.ldb, c_rows, p0,
                  l0 > 0);
        }
      }
      if (g.k == 0)  // no products: zeros
        for (i64 r = g0; r < g1; ++r) std::fill_n(c + r * g.ldc + p0, np, 0.0f);
    }
  });
}

}  // namespace dagrad::cpu
