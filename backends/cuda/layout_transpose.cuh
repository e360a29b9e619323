// Batched matrix transpose, out[b][c][r] = in[b][r][c], through 32 x 32 shared-memory tiles so
// that a warp both reads and writes 32 consecutive elements. NCHW -> NHWC is the transpose of
// each image's (C, H*W) matrix, NHWC -> NCHW that of its (H*W, C) matrix. Elements move as
// words of their width, so one instantiation per width serves every dtype.
// See conv2d_generic.cuh for why these templates live in an anonymous namespace.
#pragma once

#include <cstdint>

#include "dagrad/backends/cuda/device_types.cuh"

namespace dagrad::cuda {
namespace {

inline constexpr int kTransposeTile = 32;
inline constexpr int kTransposeRowsPerPass = 8;  // a block is 32 x 8 threads, 4 rows each

struct BatchedTranspose {
  std::int64_t batch = 0, rows = 0, cols = 0;  // of the input matrices
};

inline BatchedTranspose nchw_to_nhwc(std::int64_t batch, std::int64_t channels, std::int64_t pixels) {
  return {batch, channels, pixels};
}
inline BatchedTranspose nhwc_to_nchw(std::int64_t batch, std::int64_t channels, std::int64_t pixels) {
  return {batch, pixels, channels};
}

// Each block walks tiles (image, tile row, tile column) with a grid stride, so any size fits a
// 1-d grid; the divisions happen once per 1024 elements.
template <class Word>
__global__ void __launch_bounds__(kTransposeTile* kTransposeRowsPerPass)
    transpose_kernel(const Word* in, Word* out, BatchedTranspose t) {
  __shared__ Word tile[kTransposeTile][kTransposeTile + 1];  // +1: a tile column spans all banks
  const std::int64_t row_tiles = (t.rows + kTransposeTile - 1) / kTransposeTile;
  const std::int64_t col_tiles = (t.cols + kTransposeTile - 1) / kTransposeTile;
  const std::int64_t per_matrix = row_tiles * col_tiles;
  const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
  DAGRAD_BLOCK_STRIDE(index, t.batch * per_matrix) {
    const std::int64_t image = index / per_matrix, within = index % per_matrix;
    const std::int64_t row0 = within / col_tiles * kTransposeTile, col0 = within % col_tiles * kTransposeTile;
    const Word* src = in + image * t.rows * t.cols;
    Word* dst = out + image * t.rows * t.cols;
    for (int i = ty; i < kTransposeTile; i += kTransposeRowsPerPass) {
      const std::int64_t row = row0 + i, col = col0 + tx;
      if (row < t.rows && col < t.cols) tile[i][tx] = src[row * t.cols + col];
    }
    __syncthreads();
    for (int i = ty; i < kTransposeTile; i += kTransposeRowsPerPass) {
      const std::int64_t col = col0 + i, row = row0 + tx;
      if (row < t.rows && col < t.cols) dst[col * t.rows + row] = tile[tx][i];
    }
    __syncthreads();  // the tile is refilled on the next pass
  }
}

inline unsigned transpose_grid(const BatchedTranspose& t) {
  const std::int64_t tiles =
      t.batch * ((t.rows + kTransposeTile - 1) / kTransposeTile) * ((t.cols + kTransposeTile - 1) / kTransposeTile);
  return grid_for(tiles, 1);
}

// Transposes `element_bytes`-wide (2, 4 or 8) elements through `launch` (conv2d_launch.cuh).
template <class Launch>
void launch_transpose(int element_bytes, const void* in, void* out, const BatchedTranspose& t, Launch& launch) {
  if (t.batch == 0 || t.rows == 0 || t.cols == 0) return;
  const dim3 grid(transpose_grid(t)), block(kTransposeTile, kTransposeRowsPerPass);
  auto go = [&]<class Word>() {
    launch("transpose_kernel", transpose_kernel<Word>, grid, block, static_cast<const Word*>(in),
           static_cast<Word*>(out), t);
  };
  if (element_bytes == 2)
    go.template operator()<std::uint16_t>();
  else if (element_bytes == 4)
    go.template operator()<std::uint32_t>();
  else
    go.template operator()<std::uint64_t>();
}

}  // namespace
}  // namespace dagrad::cuda
