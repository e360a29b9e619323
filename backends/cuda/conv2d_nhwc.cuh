// The NHWC implicit-GEMM kernels (ConvVariant::FilterNhwc and ForwardNhwc, see conv_plan.hpp).
// A slab loader (conv2d_nhwc_loaders.cuh) stages the operands; these kernels multiply them:
// half/bfloat16 on tensor cores (wmma 16x16x16, float accumulators), float32/float64 on CUDA
// cores. Slabs are double-buffered: the next one is read into registers while the current one
// is multiplied. C is a row-major [m, out_depth] matrix in both ops (the HWIO filter gradient,
// the NHWC Conv2D output). See conv2d_generic.cuh for why these kernels live in an anonymous
// namespace.
#pragma once

#include <mma.h>

#include "dagrad/backends/cuda/conv2d_generic.cuh"
#include "dagrad/backends/cuda/conv2d_nhwc_loaders.cuh"
#include "dagrad/backends/cuda/device_types.cuh"

namespace dagrad::cuda {
namespace {

// The k loop shared by both kernels: stage slab 0, then per slab load the next one into
// registers, multiply the current one (`multiply(as, bs)`), and store the next one into the
// other buffer. One barrier per slab: a buffer is rewritten only after every thread has passed
// the barrier that ends its last use.
template <class Loader, class T = typename Loader::Type, class Multiply>
__device__ __forceinline__ void nhwc_k_loop(Loader& loader, const T* a, const T* b, int64_t k_begin, int64_t k_end,
                                            T* as0, T* as1, T* bs0, T* bs1, Multiply&& multiply) {
  constexpr int kBk = Loader::kBk;
  loader.load(a, b, k_begin, k_end);
  loader.store(as0, bs0);
  __syncthreads();
  int current = 0;
  for (int64_t k0 = k_begin; k0 < k_end; k0 += kBk) {
    const bool more = k0 + kBk < k_end;
    if (more) loader.load(a, b, k0 + kBk, k_end);
    multiply(current == 0 ? as0 : as1, current == 0 ? bs0 : bs1);
    if (more) loader.store(current == 0 ? as1 : as0, current == 0 ? bs1 : bs0);
    __syncthreads();
    current ^= 1;
  }
}

// half / bfloat16 on tensor cores: warps in a 2 x (warps / 2) grid, each 16 x 16 wmma tiles.
template <class Loader, class T = typename Loader::Type>
__global__ void __launch_bounds__(Loader::kThreads)
    nhwc_wmma_kernel(const __grid_constant__ NhwcArgs args, const T* a, const T* b, T* out, float* work) {
  namespace wmma = nvcuda::wmma;
  constexpr int kBm = Loader::kBm, kBk = Loader::kBk, kWarps = Loader::kThreads / 32, kWarpsN = kWarps / 2;
  constexpr int kWarpRows = kBm / 2, kWarpCols = kBm / kWarpsN;
  constexpr int kFragsM = kWarpRows / 16, kFragsN = kWarpCols / 16;
  constexpr int kLdA = Loader::kLdA, kLdB = Loader::kLdB;
  constexpr int kSlabA = Loader::kAKMajor ? kBk * kLdA : kBm * kLdA;
  constexpr int kSlabB = Loader::kBKMajor ? kBk * kLdB : kBm * kLdB;
  constexpr int kBytes = 2 * (kSlabA + kSlabB) * static_cast<int>(sizeof(T));
  static_assert(kBytes >= kWarps * 256 * 4, "the epilogue staging reuses the slab buffers");
  static_assert(kBk % 16 == 0 && kWarpRows % 16 == 0 && kWarpCols % 16 == 0, "whole wmma tiles");
  // wmma wants 32-byte aligned tiles: every slab buffer and 16-row step must keep that.
  static_assert((kSlabA * sizeof(T)) % 32 == 0 && (kSlabB * sizeof(T)) % 32 == 0 && (16 * kLdA * sizeof(T)) % 32 == 0 &&
                (16 * kLdB * sizeof(T)) % 32 == 0);
  // A(m, k) and B(k, n) as the loader stores them: [k][m] is column-major A, [n][k] column-major B.
  using ALayout = std::conditional_t<Loader::kAKMajor, wmma::col_major, wmma::row_major>;
  using BLayout = std::conditional_t<Loader::kBKMajor, wmma::row_major, wmma::col_major>;
  __shared__ __align__(32) unsigned char smem[kBytes];
  T* slabs = reinterpret_cast<T*>(smem);  // A0, A1, B0, B1

  const ConvGemm& p = args.p;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int warp_m = (warp % 2) * kWarpRows, warp_n = (warp / 2) * kWarpCols;
  const int64_t group = blockIdx.z / args.splits;
  const int split = blockIdx.z % args.splits;
  const int64_t m0 = int64_t{blockIdx.x} * kBm, n0 = int64_t{blockIdx.y} * kBm;
  int64_t k_begin, k_end;
  split_range(p.k, kBk, args.splits, split, &k_begin, &k_end);

  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[kFragsM][kFragsN];
  for (auto& row : acc) {
    for (auto& f : row) wmma::fill_fragment(f, 0.0f);
  }
  Loader loader(args, group, m0, n0, tid);
  T* as0 = slabs;
  T* bs0 = slabs + 2 * kSlabA;
  nhwc_k_loop(loader, a, b, k_begin, k_end, as0, as0 + kSlabA, bs0, bs0 + kSlabB, [&](const T* as, const T* bs) {
#pragma unroll
    for (int kk = 0; kk < kBk; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, T, ALayout> fa[kFragsM];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, T, BLayout> fb[kFragsN];
#pragma unroll
      for (int i = 0; i < kFragsM; ++i) {
        const int row = warp_m + 16 * i;
        wmma::load_matrix_sync(fa[i], as + (Loader::kAKMajor ? kk * kLdA + row : row * kLdA + kk), kLdA);
      }
#pragma unroll
      for (int j = 0; j < kFragsN; ++j) {
        const int col = warp_n + 16 * j;
        wmma::load_matrix_sync(fb[j], bs + (Loader::kBKMajor ? kk * kLdB + col : col * kLdB + kk), kLdB);
      }
#pragma unroll
      for (int i = 0; i < kFragsM; ++i) {
#pragma unroll
        for (int j = 0; j < kFragsN; ++j) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
      }
    }
  });
  // Epilogue: each warp stages one 16 x 16 tile at a time and writes the in-range elements.
  float* stage = reinterpret_cast<float*>(smem) + warp * 256;
#pragma unroll  // constant fragment indices keep acc in registers
  for (int i = 0; i < kFragsM; ++i) {
#pragma unroll
    for (int j = 0; j < kFragsN; ++j) {
      wmma::store_matrix_sync(stage, acc[i][j], 16, wmma::mem_row_major);
      __syncwarp();
      for (int e = lane; e < 256; e += 32) {
        const int64_t row = m0 + warp_m + 16 * i + e / 16, col = n0 + warp_n + 16 * j + e % 16;
        if (row < p.m && col < p.n)
          store_result<T, float, true>(p, group, split, args.splits, row, col, stage[e], out, work);
      }
      __syncwarp();
    }
  }
}

// float32 / float64 on CUDA cores: 16 x 16 threads, each a (bm / 16)^2 micro-tile made of two
// row halves and two column halves, bm / 2 apart, so a warp's shared-memory reads are vectors of
// consecutive elements. The loader stores A and B k-major.
template <class Loader, class T = typename Loader::Type>
__global__ void __launch_bounds__(256)
    nhwc_simt_kernel(const __grid_constant__ NhwcArgs args, const T* a, const T* b, T* out, T* work) {
  static_assert(Loader::kThreads == 256 && Loader::kAKMajor && Loader::kBKMajor);
  constexpr int kBm = Loader::kBm, kBk = Loader::kBk, kMicro = kBm / 16, kHalf = kMicro / 2;
  constexpr int kLdA = Loader::kLdA, kLdB = Loader::kLdB, kSlabA = kBk * kLdA, kSlabB = kBk * kLdB;
  using Pair = Vec<T, kHalf>;
  __shared__ __align__(16) T slabs[2 * (kSlabA + kSlabB)];  // A0, A1, B0, B1

  const ConvGemm& p = args.p;
  const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
  const int64_t group = blockIdx.z / args.splits;
  const int split = blockIdx.z % args.splits;
  const int64_t m0 = int64_t{blockIdx.x} * kBm, n0 = int64_t{blockIdx.y} * kBm;
  int64_t k_begin, k_end;
  split_range(p.k, kBk, args.splits, split, &k_begin, &k_end);
  // Micro-tile element i of this thread: row/column offset within the block tile.
  auto offset = [](int t, int i) { return (i < kHalf ? 0 : kBm / 2) + t * kHalf + i % kHalf; };

  T acc[kMicro][kMicro] = {};
  Loader loader(args, group, m0, n0, tid);
  T* as0 = slabs;
  T* bs0 = slabs + 2 * kSlabA;
  nhwc_k_loop(loader, a, b, k_begin, k_end, as0, as0 + kSlabA, bs0, bs0 + kSlabB, [&](const T* as, const T* bs) {
#pragma unroll
    for (int kk = 0; kk < kBk; ++kk) {
      T av[kMicro], bv[kMicro];
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const Pair ap = load_vec<Pair>(as + kk * kLdA + half * (kBm / 2) + ty * kHalf);
        const Pair bp = load_vec<Pair>(bs + kk * kLdB + half * (kBm / 2) + tx * kHalf);
#pragma unroll
        for (int i = 0; i < kHalf; ++i) {
          av[half * kHalf + i] = ap.v[i];
          bv[half * kHalf + i] = bp.v[i];
        }
      }
#pragma unroll
      for (int i = 0; i < kMicro; ++i) {
#pragma unroll
        for (int j = 0; j < kMicro; ++j) acc[i][j] = fma(av[i], bv[j], acc[i][j]);
      }
    }
  });
#pragma unroll  // constant micro-tile indices keep acc in registers
  for (int i = 0; i < kMicro; ++i) {
    const int64_t row = m0 + offset(ty, i);
#pragma unroll
    for (int j = 0; j < kMicro; ++j) {
      const int64_t col = n0 + offset(tx, j);
      if (row < p.m && col < p.n)
        store_result<T, T, true>(p, group, split, args.splits, row, col, acc[i][j], out, work);
    }
  }
}

}  // namespace
}  // namespace dagrad::cuda
