// The generic implicit-GEMM convolution kernels (any conv op, layout and size; see
// conv_index.hpp): shared-memory tiled, half/bfloat16 on tensor cores (wmma 16x16x16, float
// accumulators), float32/float64 on CUDA cores. Split-K writes per-split partials that
// conv_combine_kernel adds in split order: no atomics, so results are bitwise repeatable.
//
// Kernel headers are compiled by nvcc (conv2d.cu) and by the host compiler in the tests
// (tests/support/cuda_sim.hpp runs them on the CPU); their anonymous namespace keeps the two
// builds' definitions of the same templates apart at link time.
#pragma once

#include <mma.h>

#include "dagrad/backends/cuda/conv_index.hpp"
#include "dagrad/backends/cuda/device_types.cuh"

namespace dagrad::cuda {
namespace {

using std::int64_t;

template <class T>
__device__ __forceinline__ acc_t<T> load_or_zero(const T* base, int64_t offset) {
  return offset >= 0 ? to_acc(base[offset]) : acc_t<T>(0);
}

// Where the block's result for C[row, col] goes: the output, or the split's partial slice.
// kRowMajorC: the kernel's C is a row-major matrix (row_major_c_offset): no switch on the op.
template <class T, class Acc, bool kRowMajorC = false>
__device__ __forceinline__ void store_result(const ConvGemm& p, int64_t group, int split, int splits, int64_t row,
                                             int64_t col, Acc value, T* c, Acc* work) {
  if (splits == 1) {
    const int64_t offset = kRowMajorC ? row_major_c_offset(p, group, row, col) : c_offset(p, group, row, col);
    c[offset] = from_acc<T>(value);
  } else {
    work[((split * p.groups + group) * p.m + row) * p.n + col] = value;
  }
}

// float32 / float64: a 64 x 64 tile per block of 256 threads, 4 x 4 results per thread.
template <class T>
__global__ void __launch_bounds__(256)
    conv_simt_kernel(ConvGemm p, const T* a, const T* b, T* c, acc_t<T>* work, int splits) {
  using Acc = acc_t<T>;
  constexpr TileShape t = kSimtTile;
  // A is stored k-major so the inner product reads a row of each slab.
  __shared__ Acc as[t.bk][t.bm + 4];
  __shared__ Acc bs[t.bk][t.bn + 4];
  const int tid = threadIdx.x;
  const int64_t group = blockIdx.z / splits;
  const int split = blockIdx.z % splits;
  const int64_t m0 = int64_t{blockIdx.x} * t.bm, n0 = int64_t{blockIdx.y} * t.bn;
  int64_t k_begin, k_end;
  split_range(p.k, t.bk, splits, split, &k_begin, &k_end);
  Acc acc[kSimtMicro][kSimtMicro] = {};
  for (int64_t k0 = k_begin; k0 < k_end; k0 += t.bk) {
    for (int e = tid; e < t.bm * t.bk; e += t.threads) {
      int r, col;
      slab_coords(e, t.bk, &r, &col);
      const int64_t gm = m0 + r, gk = k0 + col;
      as[col][r] = gm < p.m && gk < k_end ? load_or_zero(a, a_offset(p, group, gm, gk)) : Acc(0);
    }
    for (int e = tid; e < t.bk * t.bn; e += t.threads) {
      int r, col;
      slab_coords(e, t.bn, &r, &col);
      const int64_t gk = k0 + r, gn = n0 + col;
      bs[r][col] = gk < k_end && gn < p.n ? load_or_zero(b, b_offset(p, group, gk, gn)) : Acc(0);
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < t.bk; ++kk) {
      Acc av[kSimtMicro], bv[kSimtMicro];
#pragma unroll
      for (int i = 0; i < kSimtMicro; ++i) av[i] = as[kk][simt_row(tid, i)];
#pragma unroll
      for (int j = 0; j < kSimtMicro; ++j) bv[j] = bs[kk][simt_col(tid, j)];
#pragma unroll
      for (int i = 0; i < kSimtMicro; ++i) {
#pragma unroll
        for (int j = 0; j < kSimtMicro; ++j) acc[i][j] = fma(av[i], bv[j], acc[i][j]);
      }
    }
    __syncthreads();
  }
  for (int i = 0; i < kSimtMicro; ++i) {
    for (int j = 0; j < kSimtMicro; ++j) {
      const int64_t gm = m0 + simt_row(tid, i), gn = n0 + simt_col(tid, j);
      if (gm < p.m && gn < p.n) store_result<T, Acc>(p, group, split, splits, gm, gn, acc[i][j], c, work);
    }
  }
}

// half / bfloat16: a 64 x 64 tile per block of 4 warps, each warp 32 x 32 as 2 x 2 wmma tiles.
template <class T>
__global__ void __launch_bounds__(128)
    conv_wmma_kernel(ConvGemm p, const T* a, const T* b, T* c, float* work, int splits) {
  namespace wmma = nvcuda::wmma;
  constexpr TileShape t = kTensorTile;
  constexpr int lda = t.bk + 8, ldb = t.bn + 8, ldc = t.bn + 4;  // padding against bank conflicts
  __shared__ __align__(32) T as[t.bm * lda];
  __shared__ __align__(32) T bs[t.bk * ldb];
  __shared__ __align__(32) float cs[t.bm * ldc];
  const int tid = threadIdx.x, warp = tid / 32;
  const int warp_m = (warp / 2) * 32, warp_n = (warp % 2) * 32;
  const int64_t group = blockIdx.z / splits;
  const int split = blockIdx.z % splits;
  const int64_t m0 = int64_t{blockIdx.x} * t.bm, n0 = int64_t{blockIdx.y} * t.bn;
  int64_t k_begin, k_end;
  split_range(p.k, t.bk, splits, split, &k_begin, &k_end);
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];
  for (auto& row : acc) {
    for (auto& f : row) wmma::fill_fragment(f, 0.0f);
  }
  const T zero = from_acc<T>(0.0f);
  for (int64_t k0 = k_begin; k0 < k_end; k0 += t.bk) {
    for (int e = tid; e < t.bm * t.bk; e += t.threads) {
      int r, col;
      slab_coords(e, t.bk, &r, &col);
      const int64_t gm = m0 + r, gk = k0 + col;
      const int64_t off = gm < p.m && gk < k_end ? a_offset(p, group, gm, gk) : -1;
      as[r * lda + col] = off >= 0 ? a[off] : zero;
    }
    for (int e = tid; e < t.bk * t.bn; e += t.threads) {
      int r, col;
      slab_coords(e, t.bn, &r, &col);
      const int64_t gk = k0 + r, gn = n0 + col;
      const int64_t off = gk < k_end && gn < p.n ? b_offset(p, group, gk, gn) : -1;
      bs[r * ldb + col] = off >= 0 ? b[off] : zero;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < t.bk; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> fa[2];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> fb[2];
#pragma unroll
      for (int i = 0; i < 2; ++i) wmma::load_matrix_sync(fa[i], as + (warp_m + 16 * i) * lda + kk, lda);
#pragma unroll
      for (int j = 0; j < 2; ++j) wmma::load_matrix_sync(fb[j], bs + kk * ldb + warp_n + 16 * j, ldb);
#pragma unroll
      for (int i = 0; i < 2; ++i) {
#pragma unroll
        for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
      }
    }
    __syncthreads();
  }
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 2; ++j) {
      wmma::store_matrix_sync(cs + (warp_m + 16 * i) * ldc + warp_n + 16 * j, acc[i][j], ldc, wmma::mem_row_major);
    }
  }
  __syncthreads();
  for (int e = tid; e < t.bm * t.bn; e += t.threads) {
    int r, col;
    slab_coords(e, t.bn, &r, &col);
    const int64_t gm = m0 + r, gn = n0 + col;
    if (gm < p.m && gn < p.n) store_result<T, float>(p, group, split, splits, gm, gn, cs[r * ldc + col], c, work);
  }
}

// Adds the split partials of each C element in split order and writes the output.
template <class T>
__global__ void conv_combine_kernel(ConvGemm p, const acc_t<T>* work, T* c, int splits) {
  const int64_t per_group = p.m * p.n, total = p.groups * per_group;
  DAGRAD_GRID_STRIDE(i, total) {
    const int64_t group = i / per_group, row = (i % per_group) / p.n, col = i % p.n;
    acc_t<T> sum = 0;
    for (int s = 0; s < splits; ++s) sum += work[s * total + i];
    c[c_offset(p, group, row, col)] = from_acc<T>(sum);
  }
}

}  // namespace
}  // namespace dagrad::cuda
