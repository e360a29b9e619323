// The NHWC filter-gradient kernels (ConvVariant::FilterNhwc, see conv_plan.hpp), per group:
//   dF[m = (kh, kw, ci), n = co] = sum over pixels k = (b, oh, ow) of x[b, h(oh, kh), w(ow, kw), ci] * dy[k, co]
// dy is a row-major [pixels, out_depth] matrix and dF a row-major [m, out_depth] one, so only x
// is gathered. Each thread stages the same slab rows (pixels) of A and B, so one pixel decode
// serves both; its filter rows are decoded once, before the k loop. Slabs are double-buffered:
// the next one is read into registers while the current one is multiplied.
// See conv2d_generic.cuh for why these kernels live in an anonymous namespace.
#pragma once

#include <mma.h>

#include "dagrad/backends/cuda/conv2d_generic.cuh"
#include "dagrad/backends/cuda/conv_plan.hpp"
#include "dagrad/backends/cuda/device_types.cuh"

namespace dagrad::cuda {
namespace {

// N consecutive elements moved as one vector access (16 bytes for a slab chunk).
template <class T, int N>
struct alignas(sizeof(T) * N) Vec {
  T v[N];
};

template <class V, class T>
__device__ __forceinline__ V load_vec(const T* p) {
#if defined(DAGRAD_CUDA_SIM)
  cuda_sim::require_aligned(p, alignof(V));
#endif
  return *reinterpret_cast<const V*>(p);
}

template <class V, class T>
__device__ __forceinline__ void store_vec(T* p, const V& v) {
#if defined(DAGRAD_CUDA_SIM)
  cuda_sim::require_aligned(p, alignof(V));
#endif
  *reinterpret_cast<V*>(p) = v;
}

struct FilterNhwcArgs {
  ConvGemm p;
  FastDivmod out_cols, out_rows;
  int splits = 1;
};

// One thread's share of staging a slab of kBk pixels: per pass, one chunk of kVec consecutive
// filter rows of A and one of kVec consecutive output channels of B, both at the same pixel.
// `Chunked`: group_in and group_out are multiples of kVec, so a chunk is one 16-byte access
// (one tap, consecutive channels); otherwise its elements are read one by one.
template <class T, int kBm, int kBk, int kThreads, bool Chunked>
class FilterSlabLoader {
 public:
  static constexpr int kVec = 16 / static_cast<int>(sizeof(T));
  static constexpr int kChunks = kBm / kVec;  // chunks across a slab row (bm = bn)
  static constexpr int kRowStep = kThreads / kChunks;
  static constexpr int kPasses = kBk / kRowStep;
  static constexpr int kLd = kBm + kVec;  // slab leading dimension: 16-byte rows, fewer bank conflicts
  static_assert(kThreads % kChunks == 0 && kBk % kRowStep == 0, "the threads must tile the slab");
  using Chunk = Vec<T, kVec>;

  __device__ FilterSlabLoader(const FilterNhwcArgs& args, int64_t group, int64_t m0, int64_t n0, int tid)
      : args_(args), chunk_(tid % kChunks), row0_(tid / kChunks) {
    const ConvGemm& p = args.p;
    x_channel0_ = group * p.group_in;
    column_ = n0 + chunk_ * kVec;
    y_channel0_ = group * p.group_out + column_;
    for (int e = 0; e < kDecoded; ++e) {
      const int64_t m = m0 + chunk_ * kVec + e;
      const int64_t tap = m / p.group_in;
      row_valid_[e] = m < p.m;
      tap_h_[e] = (tap / p.filter_cols) * p.dilation_rows - p.pad_top;
      tap_w_[e] = (tap % p.filter_cols) * p.dilation_cols - p.pad_left;
      channel_[e] = x_channel0_ + m % p.group_in;
    }
  }

  // Reads slab rows k0 + row0 + pass * kRowStep into registers; rows at or past k_end are zero.
  __device__ void load(const T* x, const T* dy, int64_t k0, int64_t k_end) {
    const ConvGemm& p = args_.p;
    const T zero = from_acc<T>(0);
#pragma unroll
    for (int pass = 0; pass < kPasses; ++pass) {
      const int64_t k = k0 + row0_ + pass * kRowStep;
      if (k >= k_end) {
        for (int e = 0; e < kVec; ++e) a_[pass].v[e] = b_[pass].v[e] = zero;
        continue;
      }
      std::uint32_t t, ow, image, oh;
      divmod(args_.out_cols, static_cast<std::uint32_t>(k), &t, &ow);
      divmod(args_.out_rows, t, &image, &oh);
      const int64_t h0 = int64_t{oh} * p.stride_rows, w0 = int64_t{ow} * p.stride_cols;
      const int64_t image_base = int64_t{image} * p.in_rows;
      // A: x at the pixel's window position of each filter row.
      if constexpr (Chunked) {
        const int64_t h = h0 + tap_h_[0], w = w0 + tap_w_[0];
        if (row_valid_[0] && h >= 0 && h < p.in_rows && w >= 0 && w < p.in_cols) {
          a_[pass] = load_vec<Chunk>(x + ((image_base + h) * p.in_cols + w) * p.in_depth + channel_[0]);
        } else {
          for (int e = 0; e < kVec; ++e) a_[pass].v[e] = zero;
        }
      } else {
#pragma unroll
        for (int e = 0; e < kVec; ++e) {
          const int64_t h = h0 + tap_h_[e], w = w0 + tap_w_[e];
          const bool inside = row_valid_[e] && h >= 0 && h < p.in_rows && w >= 0 && w < p.in_cols;
          a_[pass].v[e] = inside ? x[((image_base + h) * p.in_cols + w) * p.in_depth + channel_[e]] : zero;
        }
      }
      // B: the pixel's row of dy.
      const T* dy_row = dy + k * p.out_depth + y_channel0_;
      if constexpr (Chunked) {
        if (column_ < p.n) {
          b_[pass] = load_vec<Chunk>(dy_row);
        } else {
          for (int e = 0; e < kVec; ++e) b_[pass].v[e] = zero;
        }
      } else {
#pragma unroll
        for (int e = 0; e < kVec; ++e) b_[pass].v[e] = column_ + e < p.n ? dy_row[e] : zero;
      }
    }
  }

  // Writes the registers to the slab buffers as[k * kLd + m] and bs[k * kLd + n].
  __device__ void store(T* as, T* bs) const {
#pragma unroll
    for (int pass = 0; pass < kPasses; ++pass) {
      const int row = row0_ + pass * kRowStep;
      store_vec(as + row * kLd + chunk_ * kVec, a_[pass]);
      store_vec(bs + row * kLd + chunk_ * kVec, b_[pass]);
    }
  }

 private:
  static constexpr int kDecoded = Chunked ? 1 : kVec;  // a chunked chunk shares one tap
  const FilterNhwcArgs& args_;
  int chunk_, row0_;
  int64_t x_channel0_, column_, y_channel0_;
  int64_t tap_h_[kDecoded], tap_w_[kDecoded], channel_[kDecoded];
  bool row_valid_[kDecoded];
  Chunk a_[kPasses], b_[kPasses];
};

// The k loop shared by both kernels: stage slab 0, then per slab load the next one into
// registers, multiply the current one (`multiply(as, bs)`), and store the next one into the
// other buffer. One barrier per slab: a buffer is rewritten only after every thread has passed
// the barrier that ends its last use.
template <class T, class Loader, class Multiply>
__device__ __forceinline__ void filter_k_loop(Loader& loader, const T* x, const T* dy, int64_t k_begin, int64_t k_end,
                                              T* as0, T* as1, T* bs0, T* bs1, Multiply&& multiply) {
  constexpr int kBk = Loader::kPasses * Loader::kRowStep;
  loader.load(x, dy, k_begin, k_end);
  loader.store(as0, bs0);
  __syncthreads();
  int current = 0;
  for (int64_t k0 = k_begin; k0 < k_end; k0 += kBk) {
    const bool more = k0 + kBk < k_end;
    if (more) loader.load(x, dy, k0 + kBk, k_end);
    multiply(current == 0 ? as0 : as1, current == 0 ? bs0 : bs1);
    if (more) loader.store(current == 0 ? as1 : as0, current == 0 ? bs1 : bs0);
    __syncthreads();
    current ^= 1;
  }
}

// half / bfloat16 on tensor cores: warps in a 2 x (warps / 2) grid, each 16 x 16 wmma tiles.
template <class T, int kBm, int kBk, int kThreads, bool Chunked>
__global__ void __launch_bounds__(kThreads)
    filter_nhwc_wmma_kernel(const __grid_constant__ FilterNhwcArgs args, const T* x, const T* dy, T* out, float* work) {
  namespace wmma = nvcuda::wmma;
  using Loader = FilterSlabLoader<T, kBm, kBk, kThreads, Chunked>;
  constexpr int kWarps = kThreads / 32, kWarpsN = kWarps / 2;
  constexpr int kWarpRows = kBm / 2, kWarpCols = kBm / kWarpsN;
  constexpr int kFragsM = kWarpRows / 16, kFragsN = kWarpCols / 16;
  constexpr int kLd = Loader::kLd, kSlab = kBk * kLd;
  constexpr int kBytes = 4 * kSlab * static_cast<int>(sizeof(T));
  static_assert(kBytes >= kWarps * 256 * 4, "the epilogue staging reuses the slab buffers");
  static_assert(kBk % 16 == 0 && kWarpRows % 16 == 0 && kWarpCols % 16 == 0, "whole wmma tiles");
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
  filter_k_loop<T>(loader, x, dy, k_begin, k_end, slabs, slabs + kSlab, slabs + 2 * kSlab, slabs + 3 * kSlab,
                   [&](const T* as, const T* bs) {
#pragma unroll
                     for (int kk = 0; kk < kBk; kk += 16) {
                       // as holds A k-major: element (m, k) at as[k * kLd + m], i.e. column-major A.
                       wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::col_major> fa[kFragsM];
                       wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> fb[kFragsN];
#pragma unroll
                       for (int i = 0; i < kFragsM; ++i) {
                         wmma::load_matrix_sync(fa[i], as + kk * kLd + warp_m + 16 * i, kLd);
                       }
#pragma unroll
                       for (int j = 0; j < kFragsN; ++j) {
                         wmma::load_matrix_sync(fb[j], bs + kk * kLd + warp_n + 16 * j, kLd);
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
        if (row < p.m && col < p.n) store_result<T, float>(p, group, split, args.splits, row, col, stage[e], out, work);
      }
      __syncwarp();
    }
  }
}

// float32 / float64 on CUDA cores: 16 x 16 threads, each a (bm / 16)^2 micro-tile made of two
// row halves and two column halves, bm / 2 apart, so a warp's shared-memory reads are vectors of
// consecutive elements.
template <class T, int kBm, int kBk, bool Chunked>
__global__ void __launch_bounds__(256)
    filter_nhwc_simt_kernel(const __grid_constant__ FilterNhwcArgs args, const T* x, const T* dy, T* out, T* work) {
  using Loader = FilterSlabLoader<T, kBm, kBk, 256, Chunked>;
  constexpr int kMicro = kBm / 16, kHalf = kMicro / 2;
  constexpr int kLd = Loader::kLd, kSlab = kBk * kLd;
  using Pair = Vec<T, kHalf>;
  __shared__ __align__(16) T slabs[4 * kSlab];  // A0, A1, B0, B1

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
  filter_k_loop<T>(loader, x, dy, k_begin, k_end, slabs, slabs + kSlab, slabs + 2 * kSlab, slabs + 3 * kSlab,
                   [&](const T* as, const T* bs) {
#pragma unroll
                     for (int kk = 0; kk < kBk; ++kk) {
                       T a[kMicro], b[kMicro];
#pragma unroll
                       for (int half = 0; half < 2; ++half) {
                         const Pair av = load_vec<Pair>(as + kk * kLd + half * (kBm / 2) + ty * kHalf);
                         const Pair bv = load_vec<Pair>(bs + kk * kLd + half * (kBm / 2) + tx * kHalf);
#pragma unroll
                         for (int i = 0; i < kHalf; ++i) {
                           a[half * kHalf + i] = av.v[i];
                           b[half * kHalf + i] = bv.v[i];
                         }
                       }
#pragma unroll
                       for (int i = 0; i < kMicro; ++i) {
#pragma unroll
                         for (int j = 0; j < kMicro; ++j) acc[i][j] = fma(a[i], b[j], acc[i][j]);
                       }
                     }
                   });
#pragma unroll  // constant micro-tile indices keep acc in registers
  for (int i = 0; i < kMicro; ++i) {
    const int64_t row = m0 + offset(ty, i);
#pragma unroll
    for (int j = 0; j < kMicro; ++j) {
      const int64_t col = n0 + offset(tx, j);
      if (row < p.m && col < p.n) store_result<T, T>(p, group, split, args.splits, row, col, acc[i][j], out, work);
    }
  }
}

}  // namespace
}  // namespace dagrad::cuda
