// Batched matrix transposes for layout changes (NCHW <-> NHWC): in 8 x 8 register tiles (AVX2)
// where the CPU has them, else element by element; parallel over 64 x 64 blocks (at most 16 KiB,
// read and written from L1). Bit moves only: every set gives the same bits.
#pragma once

#include <cstdint>
#include <vector>

#include "dagrad/core/dtype.hpp"

namespace dagrad::cpu {

// out[n][j][i] = in[n][i][j] for `images` matrices of rows x cols each (NCHW -> NHWC: rows =
// channels, cols = pixels; NHWC -> NCHW the other way round). in and out do not overlap.
void transpose_images(const float* in, std::int64_t images, std::int64_t rows, std::int64_t cols, float* out);
void transpose_images(const half* in, std::int64_t images, std::int64_t rows, std::int64_t cols, half* out);
void transpose_images(const bfloat16* in, std::int64_t images, std::int64_t rows, std::int64_t cols, bfloat16* out);

// One block on this thread: out[j * out_stride + i] = in[i * in_stride + j] for i < rows, j < cols
// (a caller's tile of a larger transpose, in cache).
void transpose_block(const float* in, std::int64_t in_stride, float* out, std::int64_t out_stride, std::int64_t rows,
                     std::int64_t cols);
void transpose_block(const half* in, std::int64_t in_stride, half* out, std::int64_t out_stride, std::int64_t rows,
                     std::int64_t cols);
void transpose_block(const bfloat16* in, std::int64_t in_stride, bfloat16* out, std::int64_t out_stride,
                     std::int64_t rows, std::int64_t cols);

// One set of block transposes: out[j * out_stride + i] = in[i * in_stride + j] for i < rows,
// j < cols, on 4-byte (float) or 2-byte (half, bfloat16 bits) elements.
struct TransposeKernels {
  const char* name;  // "avx2" or "scalar"
  void (*block32)(const float* in, long long in_stride, float* out, long long out_stride, long long rows,
                  long long cols);
  void (*block16)(const std::uint16_t* in, long long in_stride, std::uint16_t* out, long long out_stride,
                  long long rows, long long cols);
};

// The sets this CPU can run, widest first: transpose_images uses the first; tests check each.
std::vector<const TransposeKernels*> usable_transpose_kernels();

}  // namespace dagrad::cpu
