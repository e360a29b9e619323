// CPU MatMul (oneTBB): operands are packed to row-major A [m, k] and B [k, n], then tasks own
// blocks of output rows. Every C[i, j] sums over p = 0..k-1 in order, so results do not depend
// on the thread count; the inner loop runs along a row of B and C, which the compiler vectorises.
#include <algorithm>
#include <vector>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include "dagrad/backends/cpu/float_only.hpp"
#include "dagrad/backends/cpu/register.hpp"

namespace dagrad::cpu {
namespace {

constexpr std::int64_t kRowTile = 4;     // rows of C sharing each loaded row of B
constexpr std::int64_t kDepthBlock = 256;  // rows of B kept hot in cache per pass

// Row-major copy of the transpose of a [rows, cols] matrix.
template <class T>
std::vector<T> transposed(const T* src, std::int64_t rows, std::int64_t cols) {
  std::vector<T> dst(static_cast<std::size_t>(rows * cols));
  tbb::parallel_for(std::int64_t{0}, cols, [&](std::int64_t j) {
    for (std::int64_t i = 0; i < rows; ++i) dst[static_cast<std::size_t>(j * rows + i)] = src[i * cols + j];
  });
  return dst;
}

template <class T>
void gemm_rows(const T* a, const T* b, T* c, std::int64_t row_begin, std::int64_t row_end, std::int64_t k, std::int64_t n) {
  std::fill(c + row_begin * n, c + row_end * n, T(0));
  for (std::int64_t p0 = 0; p0 < k; p0 += kDepthBlock) {
    const std::int64_t p1 = std::min(k, p0 + kDepthBlock);
    std::int64_t i = row_begin;
    for (; i + kRowTile <= row_end; i += kRowTile) {
      T* c0 = c + i * n;
      T* c1 = c0 + n;
      T* c2 = c1 + n;
      T* c3 = c2 + n;
      for (std::int64_t p = p0; p < p1; ++p) {
        const T a0 = a[i * k + p], a1 = a[(i + 1) * k + p], a2 = a[(i + 2) * k + p], a3 = a[(i + 3) * k + p];
        const T* bp = b + p * n;
        for (std::int64_t j = 0; j < n; ++j) {
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
      for (std::int64_t p = p0; p < p1; ++p) {
        const T av = a[i * k + p];
        const T* bp = b + p * n;
        for (std::int64_t j = 0; j < n; ++j) ci[j] += av * bp[j];
      }
    }
  }
}

template <class T>
void mat_mul(KernelContext& c) {
  const Tensor& a = c.input(0);
  const Tensor& b = c.input(1);
  const bool ta = c.attr<bool>("transpose_a"), tb = c.attr<bool>("transpose_b");
  Tensor& out = c.allocate_output(0);
  const std::int64_t m = out.shape()[0], n = out.shape()[1];
  const std::int64_t k = ta ? a.shape()[0] : a.shape()[1];
  std::vector<T> a_packed, b_packed;
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  if (ta) {
    a_packed = transposed(pa, a.shape()[0], a.shape()[1]);
    pa = a_packed.data();
  }
  if (tb) {
    b_packed = transposed(pb, b.shape()[0], b.shape()[1]);
    pb = b_packed.data();
  }
  T* pc = out.data<T>();
  const std::int64_t tiles = (m + kRowTile - 1) / kRowTile;
  // About 64k multiply-adds per task at least.
  const std::int64_t grain = std::max<std::int64_t>(1, (1 << 16) / std::max<std::int64_t>(kRowTile * k * n, 1));
  tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, tiles, grain), [&](const tbb::blocked_range<std::int64_t>& r) {
    gemm_rows(pa, pb, pc, r.begin() * kRowTile, std::min(m, r.end() * kRowTile), k, n);
  });
}

}  // namespace

void register_matmul_kernels(KernelRegistry& r) {
  add_kernels(r, "MatMul", Device::Kind::CPU, kBackend, kPriority, {DType::Float32, DType::Float64},
              float_only([]<class T>() -> KernelFn { return mat_mul<T>; }));
}

}  // namespace dagrad::cpu
