// cpu::gemm (backends/cpu/gemm.hpp), the float32 products of MatMul and the NCHW 1x1 convolutions:
// against float64 sums on shapes with several reduction blocks, row groups and column tails, strided
// and batched operands (columns past n untouched), k = 0; the same bits for 1, 2 and 3 threads
// (the task split follows the thread count); and MatMul with each transpose through the op.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <tbb/task_arena.h>

#include <dagrad/backends/cpu/gemm.hpp>
#include <dagrad/dagrad.hpp>

namespace {

using namespace dagrad;
using i64 = std::int64_t;

struct Problem {
  i64 m, k, n, batch;
  std::vector<float> a, b, c;  // b and c: `batch` matrices with row strides n + 2 and n + 3
  i64 ldb() const { return n + 2; }
  i64 ldc() const { return n + 3; }
  i64 b_stride() const { return k * ldb() + 1; }
  i64 c_stride() const { return m * ldc() + 1; }

  Problem(i64 m_, i64 k_, i64 n_, i64 batch_, std::mt19937& rng) : m(m_), k(k_), n(n_), batch(batch_) {
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    a.resize(static_cast<std::size_t>(m * k));
    b.resize(static_cast<std::size_t>(batch * b_stride()));
    for (float& v : a) v = u(rng);
    for (float& v : b) v = u(rng);
    c.assign(static_cast<std::size_t>(batch * c_stride()), std::numeric_limits<float>::quiet_NaN());
  }
  std::vector<float> run() const {
    std::vector<float> out = c;
    cpu::gemm({.m = m,
               .k = k,
               .n = n,
               .a = a.data(),
               .lda = k,
               .b = b.data(),
               .ldb = ldb(),
               .c = out.data(),
               .ldc = ldc(),
               .batch = batch,
               .b_stride = b_stride(),
               .c_stride = c_stride()});
    return out;
  }
};

void check_against_float64(const Problem& p, const std::vector<float>& got) {
  for (i64 img = 0; img < p.batch; ++img)
    for (i64 i = 0; i < p.m; ++i)
      for (i64 j = 0; j < p.ldc(); ++j) {
        const float value = got[static_cast<std::size_t>(img * p.c_stride() + i * p.ldc() + j)];
        INFO("image " << img << " row " << i << " column " << j);
        if (j >= p.n) {  // past the matrix: untouched
          REQUIRE(std::isnan(value));
          continue;
        }
        double want = 0, scale = 0;
        for (i64 q = 0; q < p.k; ++q) {
          const double product = static_cast<double>(p.a[static_cast<std::size_t>(i * p.k + q)]) *
                                 p.b[static_cast<std::size_t>(img * p.b_stride() + q * p.ldb() + j)];
          want += product;
          scale += std::abs(product);
        }
        REQUIRE(std::abs(value - want) <= 1e-6 * scale + 1e-30);
      }
}

}  // namespace

TEST_CASE("cpu gemm matches float64 sums: reduction blocks, row groups, column tails, strides, batches, k = 0",
          "[cpu][gemm]") {
  std::mt19937 rng(17);
  for (const auto [m, k, n, batch] : {std::array<i64, 4>{1, 1, 1, 1},
                                      {3, 5, 17, 2},
                                      {50, 300, 130, 1},
                                      {49, 128, 64, 3},
                                      {7, 129, 200, 1},
                                      {60, 17, 1000, 2},
                                      {13, 260, 1100, 2},  // rows a page apart: the prefetched blocks
                                      {5, 0, 9, 2}}) {
    INFO("m " << m << " k " << k << " n " << n << " batch " << batch);
    const Problem p(m, k, n, batch, rng);
    check_against_float64(p, p.run());
  }
}

TEST_CASE("cpu gemm gives the same bits for 1, 2 and 3 threads", "[cpu][gemm]") {
  std::mt19937 rng(23);
  for (const auto [m, k, n, batch] :
       {std::array<i64, 4>{40, 200, 1000, 1}, {100, 70, 333, 2}, {8, 300, 77, 1}, {20, 150, 1030, 2}}) {
    const Problem p(m, k, n, batch, rng);
    std::vector<float> first;
    for (int threads : {1, 2, 3}) {
      std::vector<float> got;
      tbb::task_arena(threads).execute([&] { got = p.run(); });
      if (threads == 1) {
        first = got;
        continue;
      }
      INFO("m " << m << " k " << k << " n " << n << " threads " << threads);
      REQUIRE(std::memcmp(got.data(), first.data(), got.size() * sizeof(float)) == 0);
    }
  }
}

TEST_CASE("cpu MatMul in float32 with each transpose matches the float64 product", "[cpu][gemm]") {
  std::mt19937 rng(29);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  const i64 m = 37, k = 150, n = 70;
  for (const bool ta : {false, true})
    for (const bool tb : {false, true}) {
      Tensor a = Tensor::empty(DType::Float64, ta ? Shape{k, m} : Shape{m, k});
      Tensor b = Tensor::empty(DType::Float64, tb ? Shape{n, k} : Shape{k, n});
      for (i64 e = 0; e < a.num_elements(); ++e) a.data<double>()[e] = static_cast<float>(u(rng));
      for (i64 e = 0; e < b.num_elements(); ++e) b.data<double>()[e] = static_cast<float>(u(rng));
      const AttrMap attrs = {{"transpose_a", ta}, {"transpose_b", tb}};
      const Tensor got = run_op("MatMul", {a.cast(DType::Float32), b.cast(DType::Float32)}, attrs)[0];
      const Tensor want = run_op("MatMul", {a, b}, attrs)[0];
      REQUIRE(got.shape() == Shape{m, n});
      INFO("transpose_a " << ta << " transpose_b " << tb);
      for (i64 e = 0; e < m * n; ++e) REQUIRE(std::abs(got.value_as_double(e) - want.value_as_double(e)) <= 1e-4);
    }
}

TEST_CASE(
    "cpu MatMul with a wide transposed B (dy W^T, computed as (W dy^T)^T) matches float64, same bits at 1 and 2 "
    "threads",
    "[cpu][gemm]") {
  // m (k + n) < n k: the kernel computes C^T = B A^T instead of copying B transposed. k = 300 spans
  // three reduction blocks; m = 1 and 7 are narrower than a vector, 32 two vectors on AVX-512.
  std::mt19937 rng(31);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (const DType dtype : {DType::Float32, DType::BFloat16, DType::Half})
    for (const i64 m : {1, 7, 32})
      for (const i64 k : {40, 300}) {
        const i64 n = 517;
        REQUIRE(m * (k + n) < n * k);
        Tensor a = Tensor::empty(DType::Float64, Shape{m, k}), b = Tensor::empty(DType::Float64, Shape{n, k});
        for (i64 e = 0; e < a.num_elements(); ++e) a.data<double>()[e] = u(rng);
        for (i64 e = 0; e < b.num_elements(); ++e) b.data<double>()[e] = u(rng);
        a = a.cast(dtype);  // exact in float64 and in every dtype below
        b = b.cast(dtype);
        const AttrMap attrs = {{"transpose_b", true}};
        const Tensor want = run_op("MatMul", {a.cast(DType::Float64), b.cast(DType::Float64)}, attrs)[0];
        Tensor one, two;
        tbb::task_arena(1).execute([&] { one = run_op("MatMul", {a, b}, attrs)[0]; });
        tbb::task_arena(2).execute([&] { two = run_op("MatMul", {a, b}, attrs)[0]; });
        INFO(dtype_name(dtype) << " m " << m << " k " << k);
        REQUIRE(one.shape() == Shape{m, n});
        CHECK(std::memcmp(one.raw_data(), two.raw_data(), one.nbytes()) == 0);
        // Relative to the largest magnitude: float32 sums, then (half, bfloat16) one rounding.
        const double tolerance = dtype == DType::Float32 ? 1e-5 : dtype == DType::Half ? 1e-3 : 8e-3;
        double worst = 0, scale = 0;
        for (i64 e = 0; e < m * n; ++e) {
          worst = std::max(worst, std::abs(one.value_as_double(e) - want.value_as_double(e)));
          scale = std::max(scale, std::abs(want.value_as_double(e)));
        }
        CHECK(worst <= tolerance * scale);
      }
}
