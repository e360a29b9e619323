// float32 matrix products on the conv `rows` micro-kernel (microkernels.hpp): MatMul and the NCHW
// 1x1 convolutions. Tasks own blocks of C (row groups by column blocks, split from the thread
// count) and sweep their columns 64 at a time, each block of B (64 columns of up to 128 rows) read
// from L1 by every row tile of the group; where rows lie pages apart (NCHW 1x1 convolutions),
// blocks of 64 rows, and the next block of B and the next tile's C lines prefetched to L2. Every C
// element sums k in order within one task: the bits do not depend on the thread count or the split.
#pragma once

#include <cstdint>

namespace dagrad::cpu {

// c[i] = a . b[i] for i < batch: a is m x k, each b[i] k x n, each c[i] m x n, all row-major with
// the given row strides (b[i] = b + i * b_stride, c[i] = c + i * c_stride).
struct GemmCall {
  std::int64_t m = 0, k = 0, n = 0;
  const float* a = nullptr;
  std::int64_t lda = 0;
  const float* b = nullptr;
  std::int64_t ldb = 0;
  float* c = nullptr;
  std::int64_t ldc = 0;
  std::int64_t batch = 1, b_stride = 0, c_stride = 0;
};
void gemm(const GemmCall& call);

}  // namespace dagrad::cpu
