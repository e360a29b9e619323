// CPU kernels (oneTBB): BiasAdd, BiasAddGrad, Relu and ReluGrad for every float dtype. half and
// bfloat16 are computed in float32 chunks and rounded once per result; BiasAdd, Relu and ReluGrad
// then equal the reference bit for bit (one float32 add or multiply of two 11- or 8-bit values,
// rounded again to 11 or 8 bits, is the correctly rounded result: 24 >= 2p + 2). BiasAddGrad sums
// fixed-size row blocks in float32 (double for double), combined in block order, so results never
// depend on the thread count; half/bfloat16 give exactly the float32 kernel's sum of the widened
// input, rounded once.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include "dagrad/backends/cpu/avx512_target.hpp"
#include "dagrad/backends/cpu/bias_add.hpp"
#include "dagrad/backends/cpu/branch_free.hpp"
#include "dagrad/backends/cpu/float_chunks.hpp"
#include "dagrad/backends/cpu/register.hpp"
#include "dagrad/ops/nn_ops.hpp"

namespace dagrad::cpu {
namespace {

using i64 = std::int64_t;
constexpr auto kCpu = Device::Kind::CPU;
constexpr i64 kGrain = 1 << 14;       // elements per task for element-wise loops
constexpr i64 kBlockRows = 256;       // BiasAddGrad rows per partial sum
constexpr i64 kMaxPattern = 1 << 15;  // longest bias period BiasAdd expands

using ops::ChannelSplit;
using ops::split_at_channel;

// f(begin, count) over [0, n) in pieces of at most kChunk elements, in parallel.
template <class F>
void parallel_chunks(i64 n, F&& f) {
  tbb::parallel_for(tbb::blocked_range<i64>(0, n, kGrain), [&](const tbb::blocked_range<i64>& r) {
    for (i64 b = r.begin(); b < r.end(); b += kChunk) f(b, std::min(kChunk, r.end() - b));
  });
}

// half/bfloat16 x < 0 on the bits: sign set, magnitude non-zero (-0 stays) and not NaN (NaN stays),
// i.e. bits in [0x8001, 0x8000 + inf]. Exact, and the loop vectorises as 16-bit integer compares.
template <class T>
void relu_bits(const T* x, T* y, i64 n) {
  static_assert(sizeof(T) == 2);  // Eigen's half and bfloat16 are one 16-bit field
  constexpr std::uint16_t inf = std::is_same_v<T, half> ? 0x7c00 : 0x7f80;
  const auto* in = reinterpret_cast<const std::uint16_t*>(x);
  auto* out = reinterpret_cast<std::uint16_t*>(y);
  for (i64 i = 0; i < n; ++i) out[i] = static_cast<std::uint16_t>(in[i] - 0x8001) < inf ? 0 : in[i];
}

// Relu of n elements; y may be x.
template <class T>
void relu_chunk(const T* x, T* y, i64 n) {
  if constexpr (is_reduced_float_v<T>) {
    relu_bits(x, y, n);
  } else {
    for (i64 i = 0; i < n; ++i) y[i] = x[i] < T(0) ? T(0) : x[i];
  }
}

// Relu, ReluGrad and BiasAdd may write over an input (forward_input_or_allocate_output): input
// element i is read, itself or widened into a chunk buffer, before output element i is stored.
template <class T>
void relu(KernelContext& c) {
  const T* x = c.input(0).data<T>();
  Tensor& out = c.forward_input_or_allocate_output({0}, 0);
  T* y = out.data<T>();
  parallel_chunks(out.num_elements(), [&](i64 b, i64 n) { relu_chunk(x + b, y + b, n); });
}

// TF multiplies by the 0/1 mask, so a NaN gradient stays NaN where features <= 0.
template <class T>
void relu_grad(KernelContext& c) {
  using A = accumulator_t<T>;
  const T* g = c.input(0).data<T>();
  const T* f = c.input(1).data<T>();
  Tensor& out = c.forward_input_or_allocate_output({0}, 0);  // the gradient's buffer
  T* y = out.data<T>();
  parallel_chunks(out.num_elements(), [&](i64 b, i64 n) {
    ChunkBuffer<T> gb, fb, yb;
    const A* gv = load(g + b, n, gb.data);  // may be yv: element i is read before it is written
    const A* __restrict fv = load(f + b, n, fb.data);
    A* yv = stage(y + b, yb.data);
    for (i64 i = 0; i < n; ++i) yv[i] = gv[i] * one_if<A>(fv[i] > A(0));
    store(yv, y + b, n);
  });
}

// The bias of every element in flat order, in the accumulator type. The bias repeats with period
// channels * inner; where that is short it is expanded once (plus a chunk, so that any chunk reads
// one contiguous run), else each chunk fills a buffer from its row segments.
template <class T>
class BiasRuns {
 public:
  using A = accumulator_t<T>;
  BiasRuns(const ChannelSplit& s, const T* bias, i64 total)
      : s_(s), bias_(static_cast<std::size_t>(s.channels)), period_(s.channels * s.inner) {
    for (i64 ch = 0; ch < s.channels; ++ch) bias_[static_cast<std::size_t>(ch)] = static_cast<A>(bias[ch]);
    if (period_ > kMaxPattern) return;
    pattern_.resize(static_cast<std::size_t>(period_ + std::min(kChunk, total)));
    for (i64 ch = 0; ch < s.channels; ++ch)
      std::fill_n(pattern_.data() + ch * s.inner, s.inner, bias_[static_cast<std::size_t>(ch)]);
    for (std::size_t j = static_cast<std::size_t>(period_); j < pattern_.size(); ++j)
      pattern_[j] = pattern_[j - static_cast<std::size_t>(period_)];
  }

  // The n <= kChunk values from flat index b on; buf (kChunk long) is filled where there is no pattern.
  const A* at(i64 b, i64 n, A* buf) const {
    if (!pattern_.empty()) return pattern_.data() + b % period_;
    for (i64 i = 0; i < n;) {
      const i64 k = b + i;
      i64 len;
      if (s_.inner == 1) {  // a row of channels: a slice of the bias
        const i64 ch = k % s_.channels;
        len = std::min(n - i, s_.channels - ch);
        std::copy_n(bias_.data() + ch, len, buf + i);
      } else {  // a row of inner elements sharing one bias
        const i64 row = k / s_.inner;
        len = std::min(n - i, (row + 1) * s_.inner - k);
        std::fill_n(buf + i, len, bias_[static_cast<std::size_t>(row % s_.channels)]);
      }
      i += len;
    }
    return buf;
  }

 private:
  ChannelSplit s_;
  std::vector<A> bias_;
  i64 period_;
  std::vector<A> pattern_;
};

template <class T>
void bias_add(KernelContext& c) {
  Tensor& out = c.forward_input_or_allocate_output({0}, 0);  // bias_add_relu allows y == x
  const ChannelSplit s = split_at_channel(c.input(0).shape(), c.attr<std::string>("data_format"));
  bias_add_relu(c.input(0).data<T>(), c.input(1).data<T>(), out.data<T>(), s, out.num_elements(), false);
}

// BiasAddGrad's block of rows [first, end), each of NV * 16 channels (NHWC; float, double, or
// bfloat16 widened in registers by its shift), summed into acc with the sums in NV GCC vectors
// held in registers: the additions of the loop in bias_add_grad, in its order (a loop per row of
// 32 channels cost its setup every row: 0.22 ms on train_cnn's first layer; bfloat16 rows went
// through the chunk buffers, 3.5x float32's time).
template <int NV, class T>
[[gnu::always_inline]] inline void sum_rows(const T* g, i64 first, i64 end, accumulator_t<T>* acc) {
  using A = accumulator_t<T>;
  GccVector<A, 16> sum[NV] = {}, v;  // locals only (avx512_target.hpp)
  for (i64 o = first; o < end; ++o) {
    for (int k = 0; k < NV; ++k) {
      if constexpr (std::is_same_v<T, bfloat16>) {
        GccVector<std::uint16_t, 16> bits;
        std::memcpy(&bits, g + (o * NV + k) * 16, sizeof bits);
        const auto wide = __builtin_convertvector(bits, GccVector<std::uint32_t, 16>) << 16;
        std::memcpy(&v, &wide, sizeof v);
      } else {
        std::memcpy(&v, g + (o * NV + k) * 16, sizeof v);
      }
      sum[k] += v;
    }
  }
  std::memcpy(acc, sum, sizeof sum);
}
template <int NV, class T>
void sum_rows_baseline(const T* g, i64 first, i64 end, accumulator_t<T>* acc) {
  sum_rows<NV>(g, first, end, acc);
}
template <int NV, class T>
DAGRAD_AVX512_TARGET void sum_rows_avx512(const T* g, i64 first, i64 end, accumulator_t<T>* acc) {
  sum_rows<NV>(g, first, end, acc);
}

// The vector form for rows of 16, 32, 48 or 64 channels; null for other rows and types (half).
template <class T>
using RowSums = void (*)(const T*, i64, i64, accumulator_t<T>*);
template <class T>
RowSums<T> vector_row_sums(i64 row_len) {
  if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, bfloat16>) {
    static constexpr RowSums<T> kBaseline[] = {sum_rows_baseline<1, T>, sum_rows_baseline<2, T>,
                                               sum_rows_baseline<3, T>, sum_rows_baseline<4, T>};
    static constexpr RowSums<T> kAvx512[] = {sum_rows_avx512<1, T>, sum_rows_avx512<2, T>, sum_rows_avx512<3, T>,
                                             sum_rows_avx512<4, T>};
    if (row_len % 16 == 0 && row_len >= 16 && row_len <= 64)
      return (use_avx512() ? kAvx512 : kBaseline)[row_len / 16 - 1];
  }
  return nullptr;
}

// Per block of kBlockRows outer rows, per channel: the sum of the block's rows. With inner > 1 each
// (row, channel) first sums its inner run from zero, as one running sum across chunk boundaries.
template <class T>
void bias_add_grad(KernelContext& c) {
  using A = accumulator_t<T>;
  const T* g = c.input(0).data<T>();
  Tensor& out_tensor = c.allocate_output(0);
  T* out = out_tensor.data<T>();
  // An empty gradient sums to zero: no loop over its (possibly huge) rows of nothing.
  if (c.input(0).num_elements() == 0) {
    std::fill_n(out, out_tensor.num_elements(), T(0));
    return;
  }
  const ChannelSplit s = split_at_channel(c.input(0).shape(), c.attr<std::string>("data_format"));
  const i64 row_len = s.channels * s.inner;
  const i64 blocks = (s.outer + kBlockRows - 1) / kBlockRows;
  std::vector<A> partial(static_cast<std::size_t>(std::max<i64>(blocks, 1) * s.channels), A(0));
  const auto row_sums = s.inner == 1 ? vector_row_sums<T>(row_len) : nullptr;
  tbb::parallel_for(i64{0}, blocks, [&](i64 blk) {
    A* acc = partial.data() + blk * s.channels;
    ChunkBuffer<T> buf;
    const i64 end = std::min(s.outer, (blk + 1) * kBlockRows);
    if (row_sums) return row_sums(g, blk * kBlockRows, end, acc);
    for (i64 o = blk * kBlockRows; o < end; ++o) {
      const T* row = g + o * row_len;
      A sum = 0;
      for (i64 c0 = 0; c0 < row_len; c0 += kChunk) {
        const i64 n = std::min(kChunk, row_len - c0);
        const A* v = load(row + c0, n, buf.data);
        if (s.inner == 1) {
          for (i64 j = 0; j < n; ++j) acc[c0 + j] += v[j];
          continue;
        }
        for (i64 j = 0; j < n;) {
          const i64 ch = (c0 + j) / s.inner, stop = std::min(n, (ch + 1) * s.inner - c0);
          for (; j < stop; ++j) sum += v[j];
          if (c0 + j == (ch + 1) * s.inner) {
            acc[ch] += sum;
            sum = 0;
          }
        }
      }
    }
  });
  for (i64 ch = 0; ch < s.channels; ++ch) {
    A sum = 0;
    for (i64 blk = 0; blk < blocks; ++blk) sum += partial[static_cast<std::size_t>(blk * s.channels + ch)];
    out[ch] = static_cast<T>(sum);  // for half/bfloat16 the one rounding, to nearest even
  }
}

}  // namespace

template <class T>
void bias_add_relu(const T* x, const T* bias_values, T* y, const ChannelSplit& s, std::int64_t total, bool relu) {
  using A = accumulator_t<T>;
  if (total == 0) return;
  const BiasRuns<T> bias(s, bias_values, total);
  parallel_chunks(total, [&](i64 b, i64 n) {
    ChunkBuffer<T> xb;
    A bb[kChunk];
    const A* bv = bias.at(b, n, bb);
    const A* xv = load(x + b, n, xb.data);
    A* yv = stage(y + b, xb.data);
    for (i64 i = 0; i < n; ++i) yv[i] = xv[i] + bv[i];
    store(yv, y + b, n);
    if (relu) relu_chunk(y + b, y + b, n);  // on the rounded sums, as Relu after BiasAdd
  });
}

template void bias_add_relu(const half*, const half*, half*, const ChannelSplit&, std::int64_t, bool);
template void bias_add_relu(const bfloat16*, const bfloat16*, bfloat16*, const ChannelSplit&, std::int64_t, bool);
template void bias_add_relu(const float*, const float*, float*, const ChannelSplit&, std::int64_t, bool);
template void bias_add_relu(const double*, const double*, double*, const ChannelSplit&, std::int64_t, bool);

void register_nn_kernels(KernelRegistry& r) {
  add_kernels(r, "BiasAdd", kCpu, kBackend, kPriority, kSchemaDTypes,
              float_kernels([]<class T>() -> KernelFn { return bias_add<T>; }));
  add_kernels(r, "BiasAddGrad", kCpu, kBackend, kPriority, kSchemaDTypes,
              float_kernels([]<class T>() -> KernelFn { return bias_add_grad<T>; }));
  add_kernels(r, "Relu", kCpu, kBackend, kPriority, kSchemaDTypes,
              float_kernels([]<class T>() -> KernelFn { return relu<T>; }));
  add_kernels(r, "ReluGrad", kCpu, kBackend, kPriority, kSchemaDTypes,
              float_kernels([]<class T>() -> KernelFn { return relu_grad<T>; }));
}

}  // namespace dagrad::cpu
