// CPU MatMul (oneTBB): operands are packed to row-major A [m, k] and B [k, n], then multiplied on
// gemm.hpp (float32: the conv micro-kernels, register tiles of C) or, for float64, by tasks owning
// blocks of output rows with the inner loop along a row of B and C, which the compiler vectorises.
// Every C[i, j] sums over p = 0..k-1 in order, so results do not depend on the thread count.
// half and bfloat16 operands are widened to float32 (products of two of them are exact there),
// multiplied by the float32 kernel and C narrowed once: exactly the float32 result on the widened
// operands, rounded. Where the CPU has AMX-BF16, bfloat16 products with k and
// n of 16 or more run on the tiles instead (matmul_amx.cpp): float32 sums in another order, rounded once.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <type_traits>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include "dagrad/backends/cpu/amx_kernels.hpp"
#include "dagrad/backends/cpu/float_buffer.hpp"
#include "dagrad/backends/cpu/gemm.hpp"
#include "dagrad/backends/cpu/matmul_amx.hpp"
#include "dagrad/backends/cpu/register.hpp"
#include "dagrad/backends/cpu/transpose.hpp"

namespace dagrad::cpu {
namespace {

using i64 = std::int64_t;
constexpr i64 kRowTile = 4;       // rows of C sharing each loaded row of B
constexpr i64 kDepthBlock = 256;  // rows of B kept hot in cache per pass

// Row-major copy of the transpose of a [rows, cols] matrix (in register tiles, transpose.hpp,
// for the 4- and 2-byte types), in workspace from the caching host allocator: a fresh vector of a
// dense layer's weights cost page faults at every step.
template <class T>
class Transposed {
 public:
  Transposed(const T* src, i64 rows, i64 cols)
      : buffer_(std::make_unique<Buffer>(host_allocator(),
                                         static_cast<std::size_t>(std::max<i64>(rows * cols, 1)) * sizeof(T))) {
    T* dst = data();
    if constexpr (std::is_same_v<T, double>) {
      tbb::parallel_for(i64{0}, cols, [&](i64 j) {
        for (i64 i = 0; i < rows; ++i) dst[j * rows + i] = src[i * cols + j];
      });
    } else {
      transpose_images(src, 1, rows, cols, dst);
    }
  }
  T* data() const { return static_cast<T*>(buffer_->data()); }

 private:
  std::unique_ptr<Buffer> buffer_;  // Buffer itself does not move
};

template <class T>
void gemm_rows(const T* a, const T* b, T* c, i64 row_begin, i64 row_end, i64 k, i64 n) {
  std::fill(c + row_begin * n, c + row_end * n, T(0));
  for (i64 p0 = 0; p0 < k; p0 += kDepthBlock) {
    const i64 p1 = std::min(k, p0 + kDepthBlock);
    i64 i = row_begin;
    for (; i + kRowTile <= row_end; i += kRowTile) {
      T* c0 = c + i * n;
      T* c1 = c0 + n;
      T* c2 = c1 + n;
      T* c3 = c2 + n;
      for (i64 p = p0; p < p1; ++p) {
        const T a0 = a[i * k + p], a1 = a[(i + 1) * k + p], a2 = a[(i + 2) * k + p], a3 = a[(i + 3) * k + p];
        const T* bp = b + p * n;
        for (i64 j = 0; j < n; ++j) {
          const T bv = bp[j];
          c0[j] += a0 * bv;
          c1[j] += a1 * bv;
          c2[j] += a2 * bv;
          c3[j] += a3 * bv;
        }
      }
    }
    for (; i < row_end; ++i) {
      T* ci = c + i * n;
      for (i64 p = p0; p < p1; ++p) {
        const T av = a[i * k + p];
        const T* bp = b + p * n;
        for (i64 j = 0; j < n; ++j) ci[j] += av * bp[j];
      }
    }
  }
}

// C = A B on packed row-major operands; done(row_begin, row_end) runs in the task that wrote
// those rows of C, while they are still in cache.
template <class T, class Done>
void gemm(const T* a, const T* b, T* c, i64 m, i64 k, i64 n, Done&& done) {
  const i64 tiles = (m + kRowTile - 1) / kRowTile;
  // About 64k multiply-adds per task at least.
  const i64 grain = std::max<i64>(1, (1 << 16) / kRowTile / std::max<i64>(k, 1) / std::max<i64>(n, 1));
  tbb::parallel_for(tbb::blocked_range<i64>(0, tiles, grain), [&](const tbb::blocked_range<i64>& r) {
    const i64 row_begin = r.begin() * kRowTile, row_end = std::min(m, r.end() * kRowTile);
    gemm_rows(a, b, c, row_begin, row_end, k, n);
    done(row_begin, row_end);
  });
}

// A [rows, cols] operand, row-major as the product reads it (transposed first where asked), in
// float32 for half/bfloat16.
template <class T>
class Packed {
 public:
  using A = accumulator_t<T>;
  Packed(const Tensor& t, bool transpose) {
    const T* p = t.data<T>();
    const i64 rows = t.shape()[0], cols = t.shape()[1];
    if (transpose) {
      transposed_.emplace(p, rows, cols);
      p = transposed_->data();
    }
    if constexpr (is_reduced_float_v<T>) {
      widened_ = std::make_unique<FloatBuffer>(to_float(p, rows * cols));
      data_ = widened_->data();
    } else {
      data_ = p;
    }
  }
  const A* data() const { return data_; }

 private:
  std::optional<Transposed<T>> transposed_;
  std::unique_ptr<FloatBuffer> widened_;
  const A* data_ = nullptr;
};

template <class T>
void mat_mul(KernelContext& c) {
  const Tensor& a = c.input(0);
  const Tensor& b = c.input(1);
  const bool ta = c.attr<bool>("transpose_a"), tb = c.attr<bool>("transpose_b");
  Tensor& out = c.allocate_output(0);
  if (out.num_elements() == 0) return;
  const i64 m = out.shape()[0], n = out.shape()[1];
  const i64 k = ta ? a.shape()[0] : a.shape()[1];
  if constexpr (std::is_same_v<T, bfloat16>) {
    if (const AmxKernels* tiles = amx_kernels(); tiles && k >= 16 && n >= 16) {
      const auto row_major = [](const Tensor& t, bool transpose, std::optional<Transposed<T>>& copy) {
        if (!transpose) return t.data<T>();
        copy.emplace(t.data<T>(), t.shape()[0], t.shape()[1]);
        return static_cast<const T*>(copy->data());
      };
      std::optional<Transposed<T>> ca, cb;
      const auto bits = [](const T* p) { return reinterpret_cast<const std::uint16_t*>(p); };
      matmul_bf16_amx(bits(row_major(a, ta, ca)), bits(row_major(b, tb, cb)),
                      reinterpret_cast<std::uint16_t*>(out.data<T>()), m, k, n, *tiles);
      return;
    }
  }
  T* pc = out.data<T>();
  if constexpr (std::is_same_v<T, double>) {
    const Packed<T> pa(a, ta), pb(b, tb);
    gemm(pa.data(), pb.data(), pc, m, k, n, [](i64, i64) {});
  } else {
    // float32 (half and bfloat16 widened) on the conv micro-kernels, narrowed once.
    FloatBuffer wide(is_reduced_float_v<T> ? m * n : 0);
    float* pf = is_reduced_float_v<T> ? wide.data() : reinterpret_cast<float*>(pc);
    if (tb && !ta && m * (k + n) < n * k) {
      // A B^T with B wide (a dense layer's input gradient, dy W^T): C^T = B A^T reads B as it lies,
      // and copies A and C transposed (m (k + n) values) instead of B (n k). Each element still
      // sums over k in order; which strategy runs depends on the shapes alone.
      const Packed<T> a_t(a, true), b_rows(b, false);
      const FloatBuffer c_t(n * m);
      cpu::gemm(
          {.m = n, .k = k, .n = m, .a = b_rows.data(), .lda = k, .b = a_t.data(), .ldb = m, .c = c_t.data(), .ldc = m});
      transpose_images(c_t.data(), 1, n, m, pf);
    } else {
      const Packed<T> pa(a, ta), pb(b, tb);
      cpu::gemm({.m = m, .k = k, .n = n, .a = pa.data(), .lda = k, .b = pb.data(), .ldb = n, .c = pf, .ldc = n});
    }
    if constexpr (is_reduced_float_v<T>) convert_from_float(wide.data(), pc, m * n);
  }
}

}  // namespace

void register_matmul_kernels(KernelRegistry& r) {
  add_kernels(r, "MatMul", Device::Kind::CPU, kBackend, kPriority, kSchemaDTypes,
              float_kernels([]<class T>() -> KernelFn { return mat_mul<T>; }));
}

}  // namespace dagrad::cpu
