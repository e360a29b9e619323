// The slab loaders of the NHWC implicit-GEMM kernels (conv2d_nhwc.cuh). Each thread stages
// fixed 16-byte chunks of a slab: its share of decoding is done once per launch where the index
// is fixed (filter rows, or output pixels) and with FastDivmod where it moves with k. A loader
// leaves A and B in shared memory k-major or not as kAKMajor and kBKMajor say, in 16-byte aligned rows.
//   FilterSlabLoader (Conv2DBackpropFilter): dF[(kh, kw, ci), co] = sum over pixels of
//     x[b, h(oh, kh), w(ow, kw), ci] * dy[pixel, co]; dy is a plain [pixels, out_depth] matrix.
//   ForwardSlabLoader (Conv2D): y[pixel, co] = sum over (kh, kw, ci) of x[b, h(oh, kh), w(ow, kw), ci]
//     * f[(kh, kw, ci), co]; the HWIO filter is a plain [taps * in, out_depth] matrix.
//   InputSlabLoader (Conv2DBackpropInput): dx[pixel, ci] = sum over (kh, kw, co) of
//     dy[source(pixel, kh, kw), co] * f[kh, kw, ci, co]; dx is a plain [pixels, in_depth] matrix.
// `Chunked`: the group's channel counts are multiples of the chunk, so a chunk is one 16-byte
// access (one tap, consecutive channels); otherwise its elements are read one by one.
#pragma once

#include <mma.h>

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

struct NhwcArgs {
  ConvGemm p;
  NhwcDivisors divisors;
  int splits = 1;
};

template <class Chunk, class T>
__device__ __forceinline__ void zero_chunk(Chunk& c) {
#pragma unroll
  for (auto& v : c.v) v = from_acc<T>(0);
}

// Chunk `e`-th elements of B, a row-major matrix whose row `row` starts at `row_start` (dy for
// the filter gradient, the filter for Conv2D): columns `column`.. of the group, zero past n.
template <bool Chunked, class Chunk, class T>
__device__ __forceinline__ void load_b_chunk(const T* row_start, int64_t column, int64_t n, Chunk& c) {
  constexpr int kVec = sizeof(Chunk) / sizeof(T);
  if constexpr (Chunked) {
    if (column < n)
      c = load_vec<Chunk>(row_start);  // n is a multiple of kVec
    else
      zero_chunk<Chunk, T>(c);
  } else {
#pragma unroll
    for (int e = 0; e < kVec; ++e) c.v[e] = column + e < n ? row_start[e] : from_acc<T>(0);
  }
}

// k = (tap, channel) of Conv2D and its input gradient, decoded: the tap's window offsets
// (kh * dilation_rows, kw * dilation_cols), the tap and the channel (in `channels` per tap). k at
// or past k_end is invalid (and decoded as 0, to keep the indices in range).
struct TapChannel {
  int64_t dh = 0, dw = 0, tap = 0, channel = 0;
  bool valid = false;
};
__device__ __forceinline__ TapChannel decode_tap_channel(const NhwcArgs& args, const FastDivmod& channels, int64_t k,
                                                         int64_t k_end) {
  TapChannel d;
  d.valid = k < k_end;
  std::uint32_t tap, channel, kh, kw;
  divmod(channels, static_cast<std::uint32_t>(d.valid ? k : 0), &tap, &channel);
  divmod(args.divisors.filter_cols, tap, &kh, &kw);
  d.dh = int64_t{kh} * args.p.dilation_rows;
  d.dw = int64_t{kw} * args.p.dilation_cols;
  d.tap = tap;
  d.channel = channel;
  return d;
}

// The offset of x[image, h, w, channel] (image_base = image * in_rows), or -1 outside the image.
__device__ __forceinline__ int64_t window_offset(const ConvGemm& p, int64_t image_base, int64_t h, int64_t w,
                                                 int64_t channel) {
  if (h < 0 || h >= p.in_rows || w < 0 || w >= p.in_cols) return -1;
  return ((image_base + h) * p.in_cols + w) * p.in_depth + channel;
}

// Conv2DBackpropFilter: per pass, one chunk of kVec consecutive filter rows of A and one of kVec
// consecutive output channels of B, both at the same pixel (slab row), so one pixel decode
// serves both; the chunk's filter rows are decoded once. A and B are stored k-major, which
// both kernels read (column-major A for wmma), so the last parameter is ignored.
template <class T, int kBm_, int kBk_, int kThreads_, bool Chunked, bool = true>
class FilterSlabLoader {
 public:
  static constexpr int kBm = kBm_, kBk = kBk_, kThreads = kThreads_;
  static constexpr int kVec = 16 / static_cast<int>(sizeof(T));
  static constexpr int kChunks = kBm / kVec;  // chunks across a slab row (bm = bn)
  static constexpr int kRowStep = kThreads / kChunks;
  static constexpr int kPasses = kBk / kRowStep;
  static constexpr bool kAKMajor = true, kBKMajor = true;
  static constexpr int kLdA = kBm + kVec, kLdB = kBm + kVec;  // 16-byte rows, fewer bank conflicts
  static_assert(kThreads % kChunks == 0 && kBk % kRowStep == 0, "the threads must tile the slab");
  using Type = T;
  using Chunk = Vec<T, kVec>;

  // args is the kernel's __grid_constant__ parameter: referencing it makes no copy.
  __device__ FilterSlabLoader(const NhwcArgs& args, int64_t group, int64_t m0, int64_t n0, int tid)
      : args_(args), chunk_(tid % kChunks), row0_(tid / kChunks) {
    const ConvGemm& p = args.p;
    column_ = n0 + chunk_ * kVec;
    y_channel0_ = group * p.group_out + column_;
    for (int e = 0; e < kDecoded; ++e) {
      const int64_t m = m0 + chunk_ * kVec + e;
      const int64_t tap = m / p.group_in;
      row_valid_[e] = m < p.m;
      tap_h_[e] = (tap / p.filter_cols) * p.dilation_rows - p.pad_top;
      tap_w_[e] = (tap % p.filter_cols) * p.dilation_cols - p.pad_left;
      channel_[e] = group * p.group_in + m % p.group_in;
    }
  }

  // Reads slab rows k0 + row0 + pass * kRowStep into registers; rows at or past k_end are zero.
  __device__ void load(const T* x, const T* dy, int64_t k0, int64_t k_end) {
    const ConvGemm& p = args_.p;
#pragma unroll
    for (int pass = 0; pass < kPasses; ++pass) {
      const int64_t k = k0 + row0_ + pass * kRowStep;
      if (k >= k_end) {
        zero_chunk<Chunk, T>(a_[pass]);
        zero_chunk<Chunk, T>(b_[pass]);
        continue;
      }
      std::uint32_t t, ow, image, oh;
      divmod(args_.divisors.out_cols, static_cast<std::uint32_t>(k), &t, &ow);
      divmod(args_.divisors.out_rows, t, &image, &oh);
      const int64_t h0 = int64_t{oh} * p.stride_rows, w0 = int64_t{ow} * p.stride_cols;
      const int64_t image_base = int64_t{image} * p.in_rows;
      if constexpr (Chunked) {
        const int64_t at = window_offset(p, image_base, h0 + tap_h_[0], w0 + tap_w_[0], channel_[0]);
        if (row_valid_[0] && at >= 0)
          a_[pass] = load_vec<Chunk>(x + at);
        else
          zero_chunk<Chunk, T>(a_[pass]);
      } else {
#pragma unroll
        for (int e = 0; e < kVec; ++e) {
          const int64_t at = window_offset(p, image_base, h0 + tap_h_[e], w0 + tap_w_[e], channel_[e]);
          a_[pass].v[e] = row_valid_[e] && at >= 0 ? x[at] : from_acc<T>(0);
        }
      }
      load_b_chunk<Chunked>(dy + k * p.out_depth + y_channel0_, column_, p.n, b_[pass]);
    }
  }

  // Writes the registers to the slab buffers as[k * kLdA + m] and bs[k * kLdB + n].
  __device__ void store(T* as, T* bs) const {
#pragma unroll
    for (int pass = 0; pass < kPasses; ++pass) {
      const int row = row0_ + pass * kRowStep;
      store_vec(as + row * kLdA + chunk_ * kVec, a_[pass]);
      store_vec(bs + row * kLdB + chunk_ * kVec, b_[pass]);
    }
  }

 private:
  static constexpr int kDecoded = Chunked ? 1 : kVec;  // a chunked chunk shares one tap
  const NhwcArgs& args_;
  int chunk_, row0_;
  int64_t column_, y_channel0_;
  int64_t tap_h_[kDecoded], tap_w_[kDecoded], channel_[kDecoded];
  bool row_valid_[kDecoded];
  Chunk a_[kPasses], b_[kPasses];
};

// Conv2D: A chunks are kVec consecutive k = (tap, channel) at one output pixel, whose window
// origin the thread decodes once per pixel it owns; k is decoded per slab. B chunks are kVec
// consecutive output channels of a filter row. A is stored m-major ([pixel][k], row-major for
// wmma) unless kSimtLayout, where the SIMT kernel wants it k-major ([k][pixel]) and the chunk
// is written element by element.
template <class T, int kBm_, int kBk_, int kThreads_, bool Chunked, bool kSimtLayout>
class ForwardSlabLoader {
 public:
  static constexpr int kBm = kBm_, kBk = kBk_, kThreads = kThreads_;
  static constexpr int kVec = 16 / static_cast<int>(sizeof(T));
  static constexpr int kAChunks = kBk / kVec;  // A chunks across a slab row (one pixel)
  static constexpr int kARowStep = kThreads / kAChunks;
  static constexpr int kAPasses = kBm / kARowStep;
  static constexpr int kBChunks = kBm / kVec;  // B chunks across a slab row (one filter row; bn = bm)
  static constexpr int kBRowStep = kThreads / kBChunks;
  static constexpr int kBPasses = kBk / kBRowStep;
  static constexpr bool kAKMajor = kSimtLayout, kBKMajor = true;
  static constexpr int kLdA = kAKMajor ? kBm + kVec : kBk + kVec, kLdB = kBm + kVec;
  static_assert(kThreads % kAChunks == 0 && kBm % kARowStep == 0, "the threads must tile the A slab");
  static_assert(kThreads % kBChunks == 0 && kBk % kBRowStep == 0, "the threads must tile the B slab");
  using Type = T;
  using Chunk = Vec<T, kVec>;

  __device__ ForwardSlabLoader(const NhwcArgs& args, int64_t group, int64_t m0, int64_t n0, int tid)
      : args_(args),
        a_chunk_(tid % kAChunks),
        a_row0_(tid / kAChunks),
        b_chunk_(tid % kBChunks),
        b_row0_(tid / kBChunks) {
    const ConvGemm& p = args.p;
    channel0_ = group * p.group_in;
    column_ = n0 + b_chunk_ * kVec;
    f_channel0_ = group * p.group_out + column_;
#pragma unroll
    for (int pass = 0; pass < kAPasses; ++pass) {
      const int64_t m = m0 + a_row0_ + pass * kARowStep;
      const int64_t ow = m % p.out_cols, t = m / p.out_cols;
      pixel_valid_[pass] = m < p.m;
      image_base_[pass] = (t / p.out_rows) * p.in_rows;
      h0_[pass] = (t % p.out_rows) * p.stride_rows - p.pad_top;
      w0_[pass] = ow * p.stride_cols - p.pad_left;
    }
  }

  __device__ void load(const T* x, const T* filter, int64_t k0, int64_t k_end) {
    const ConvGemm& p = args_.p;
    // A: this thread's chunk column of k, at each of its pixels.
    TapChannel d[kDecoded];
#pragma unroll
    for (int e = 0; e < kDecoded; ++e)
      d[e] = decode_tap_channel(args_, args_.divisors.group_in, k0 + a_chunk_ * kVec + e, k_end);
#pragma unroll
    for (int pass = 0; pass < kAPasses; ++pass) {
      auto offset = [&](const TapChannel& t) {
        return window_offset(p, image_base_[pass], h0_[pass] + t.dh, w0_[pass] + t.dw, channel0_ + t.channel);
      };
      if constexpr (Chunked) {
        const int64_t at = offset(d[0]);
        if (pixel_valid_[pass] && d[0].valid && at >= 0)
          a_[pass] = load_vec<Chunk>(x + at);
        else
          zero_chunk<Chunk, T>(a_[pass]);
      } else {
#pragma unroll
        for (int e = 0; e < kVec; ++e) {
          const int64_t at = offset(d[e]);
          a_[pass].v[e] = pixel_valid_[pass] && d[e].valid && at >= 0 ? x[at] : from_acc<T>(0);
        }
      }
    }
    // B: filter rows k0 + b_row0 + pass * kBRowStep.
#pragma unroll
    for (int pass = 0; pass < kBPasses; ++pass) {
      const int64_t k = k0 + b_row0_ + pass * kBRowStep;
      if (k < k_end)
        load_b_chunk<Chunked>(filter + k * p.out_depth + f_channel0_, column_, p.n, b_[pass]);
      else
        zero_chunk<Chunk, T>(b_[pass]);
    }
  }

  // Writes the registers to the slab buffers: as as kAKMajor says, bs[k * kLdB + n].
  __device__ void store(T* as, T* bs) const {
#pragma unroll
    for (int pass = 0; pass < kAPasses; ++pass) {
      const int row = a_row0_ + pass * kARowStep;
      if constexpr (kAKMajor) {
#pragma unroll
        for (int e = 0; e < kVec; ++e) as[(a_chunk_ * kVec + e) * kLdA + row] = a_[pass].v[e];
      } else {
        store_vec(as + row * kLdA + a_chunk_ * kVec, a_[pass]);
      }
    }
#pragma unroll
    for (int pass = 0; pass < kBPasses; ++pass) {
      store_vec(bs + (b_row0_ + pass * kBRowStep) * kLdB + b_chunk_ * kVec, b_[pass]);
    }
  }

 private:
  static constexpr int kDecoded = Chunked ? 1 : kVec;  // a chunked chunk shares one tap
  const NhwcArgs& args_;
  int a_chunk_, a_row0_, b_chunk_, b_row0_;
  int64_t channel0_, column_, f_channel0_;
  int64_t image_base_[kAPasses], h0_[kAPasses], w0_[kAPasses];
  bool pixel_valid_[kAPasses];
  Chunk a_[kAPasses], b_[kBPasses];
};

// Conv2DBackpropInput: dx[pixel, ci] = sum over k = (tap, co) of dy[source(pixel, tap), co] *
// f[tap, ci, co], where source is the output position whose window puts `tap` on the pixel
// (source_position in conv_index.hpp), or none. A chunks are kVec consecutive k (output
// channels of one tap) at one input pixel, decoded once per pixel; B chunks are kVec consecutive
// k at one input channel, contiguous in the HWIO filter. A and B chunks of a thread cover the
// same k, so one decode per slab serves both. A is stored [pixel][k] and B [ci][k] (row-major A,
// column-major B for wmma) unless kSimtLayout, where both are written k-major element by element.
template <class T, int kBm_, int kBk_, int kThreads_, bool Chunked, bool kSimtLayout>
class InputSlabLoader {
 public:
  static constexpr int kBm = kBm_, kBk = kBk_, kThreads = kThreads_;
  static constexpr int kVec = 16 / static_cast<int>(sizeof(T));
  static constexpr int kChunks = kBk / kVec;  // chunks across a slab row (one pixel, or one ci)
  static constexpr int kRowStep = kThreads / kChunks;
  static constexpr int kPasses = kBm / kRowStep;  // bn = bm, so A and B take as many passes
  static constexpr bool kAKMajor = kSimtLayout, kBKMajor = kSimtLayout;
  static constexpr int kLdA = kSimtLayout ? kBm + kVec : kBk + kVec, kLdB = kLdA;
  static_assert(kThreads % kChunks == 0 && kBm % kRowStep == 0, "the threads must tile the slab");
  using Type = T;
  using Chunk = Vec<T, kVec>;

  __device__ InputSlabLoader(const NhwcArgs& args, int64_t group, int64_t m0, int64_t n0, int tid)
      : args_(args), chunk_(tid % kChunks), row0_(tid / kChunks) {
    const ConvGemm& p = args.p;
    dy_channel0_ = group * p.group_out;
#pragma unroll
    for (int pass = 0; pass < kPasses; ++pass) {
      const int64_t m = m0 + row0_ + pass * kRowStep;
      const int64_t iw = m % p.in_cols, t = m / p.in_cols;
      pixel_valid_[pass] = m < p.m;
      dy_image_base_[pass] = (t / p.in_rows) * p.out_rows;
      h_reach_[pass] = t % p.in_rows + p.pad_top;
      w_reach_[pass] = iw + p.pad_left;
      const int64_t ci = n0 + row0_ + pass * kRowStep;
      ci_valid_[pass] = ci < p.n;
      f_row_[pass] = ci;
    }
  }

  __device__ void load(const T* dy, const T* filter, int64_t k0, int64_t k_end) {
    const ConvGemm& p = args_.p;
    TapChannel d[kDecoded];
#pragma unroll
    for (int e = 0; e < kDecoded; ++e)
      d[e] = decode_tap_channel(args_, args_.divisors.group_out, k0 + chunk_ * kVec + e, k_end);
#pragma unroll
    for (int pass = 0; pass < kPasses; ++pass) {
      // A: dy at the output position that reads tap (kh, kw) from this pixel.
      if constexpr (Chunked) {
        const int64_t at = dy_offset(pass, d[0]);
        if (pixel_valid_[pass] && d[0].valid && at >= 0)
          a_[pass] = load_vec<Chunk>(dy + at);
        else
          zero_chunk<Chunk, T>(a_[pass]);
      } else {
#pragma unroll
        for (int e = 0; e < kVec; ++e) {
          const int64_t at = dy_offset(pass, d[e]);
          a_[pass].v[e] = pixel_valid_[pass] && d[e].valid && at >= 0 ? dy[at] : from_acc<T>(0);
        }
      }
      // B: f[tap, ci, group * group_out + co] for this pass's input channel ci.
      auto filter_at = [&](const TapChannel& t) {
        return (t.tap * p.group_in + f_row_[pass]) * p.out_depth + dy_channel0_ + t.channel;
      };
      if constexpr (Chunked) {
        if (ci_valid_[pass] && d[0].valid)
          b_[pass] = load_vec<Chunk>(filter + filter_at(d[0]));
        else
          zero_chunk<Chunk, T>(b_[pass]);
      } else {
#pragma unroll
        for (int e = 0; e < kVec; ++e) {
          b_[pass].v[e] = ci_valid_[pass] && d[e].valid ? filter[filter_at(d[e])] : from_acc<T>(0);
        }
      }
    }
  }

  __device__ void store(T* as, T* bs) const {
#pragma unroll
    for (int pass = 0; pass < kPasses; ++pass) {
      const int row = row0_ + pass * kRowStep;
      if constexpr (kSimtLayout) {
#pragma unroll
        for (int e = 0; e < kVec; ++e) {
          as[(chunk_ * kVec + e) * kLdA + row] = a_[pass].v[e];
          bs[(chunk_ * kVec + e) * kLdB + row] = b_[pass].v[e];
        }
      } else {
        store_vec(as + row * kLdA + chunk_ * kVec, a_[pass]);
        store_vec(bs + row * kLdB + chunk_ * kVec, b_[pass]);
      }
    }
  }

 private:
  static constexpr int kDecoded = Chunked ? 1 : kVec;  // a chunked chunk shares one tap

  // dy[image, (h_reach - dh) / stride, (w_reach - dw) / stride, co] when both quotients are exact
  // and in range; else -1.
  __device__ int64_t dy_offset(int pass, const TapChannel& t) const {
    const ConvGemm& p = args_.p;
    const int64_t nh = h_reach_[pass] - t.dh, nw = w_reach_[pass] - t.dw;
    if (nh < 0 || nw < 0) return -1;
    std::uint32_t oh, rh, ow, rw;
    divmod(args_.divisors.stride_rows, static_cast<std::uint32_t>(nh), &oh, &rh);
    divmod(args_.divisors.stride_cols, static_cast<std::uint32_t>(nw), &ow, &rw);
    if (rh != 0 || rw != 0 || oh >= p.out_rows || ow >= p.out_cols) return -1;
    return ((dy_image_base_[pass] + oh) * p.out_cols + ow) * p.out_depth + dy_channel0_ + t.channel;
  }

  const NhwcArgs& args_;
  int chunk_, row0_;
  int64_t dy_channel0_;
  int64_t dy_image_base_[kPasses], h_reach_[kPasses], w_reach_[kPasses], f_row_[kPasses];
  bool pixel_valid_[kPasses], ci_valid_[kPasses];
  Chunk a_[kPasses], b_[kPasses];
};
}  // namespace
}  // namespace dagrad::cuda
