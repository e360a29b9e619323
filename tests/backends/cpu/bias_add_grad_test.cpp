// BiasAddGrad's CPU kernel sums its rows in blocks of 256 (nn_kernels.cpp's kBlockRows), each in
// row order from zero, and adds the blocks' sums in block order: checked bit for bit against that
// fold written out here, in NHWC (rows of 16 to 64 channels take the vector form, others the
// loop) and NCHW, float32, float64 and bfloat16 (summed in float32), on 1 thread and on all.
#include <catch2/catch.hpp>

#include <cstring>
#include <random>
#include <vector>

#include <dagrad/dagrad.hpp>

namespace {

using namespace dagrad;

constexpr std::int64_t kBlockRows = 256;

template <class T>
Tensor random_rows(const Shape& shape, std::mt19937& rng) {
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<T> v(static_cast<std::size_t>(shape.num_elements()));
  for (auto& x : v) x = static_cast<T>(u(rng));
  v[3] = T(-0.0);  // a -0 first value: the sum starts from +0
  return Tensor::from_values<T>(shape, v);
}

// The fold of NHWC rows (outer x channels) in the kernel's order.
template <class T>
std::vector<T> block_fold(const T* g, std::int64_t rows, std::int64_t channels) {
  std::vector<T> total(static_cast<std::size_t>(channels), T(0));
  for (std::int64_t c = 0; c < channels; ++c) {
    T sum = 0;
    for (std::int64_t b0 = 0; b0 < rows; b0 += kBlockRows) {
      T block = 0;
      for (std::int64_t o = b0; o < std::min(rows, b0 + kBlockRows); ++o) block += g[o * channels + c];
      sum += block;
    }
    total[static_cast<std::size_t>(c)] = sum;
  }
  return total;
}

// A the type the sums are formed in (float for bfloat16, whose result is rounded once).
template <class T, class A = T>
void check_nhwc(std::int64_t channels, std::mt19937& rng) {
  const Shape shape{3, 17, 11, channels};  // 561 rows: two full blocks and a partial one
  const Tensor g = random_rows<T>(shape, rng);
  std::vector<A> wide(static_cast<std::size_t>(shape.num_elements()));
  for (std::size_t i = 0; i < wide.size(); ++i) wide[i] = static_cast<A>(g.data<T>()[i]);
  const std::vector<A> sums = block_fold(wide.data(), 3 * 17 * 11, channels);
  std::vector<T> expected(sums.size());
  for (std::size_t i = 0; i < sums.size(); ++i) expected[i] = static_cast<T>(sums[i]);
  for (int threads : {1, 0}) {
    set_num_threads(threads);
    const Tensor got = run_op("BiasAddGrad", {g}, {})[0];
    REQUIRE(got.num_elements() == channels);
    CHECK(std::memcmp(got.data<T>(), expected.data(), expected.size() * sizeof(T)) == 0);
  }
  set_num_threads(0);
}

}  // namespace

TEST_CASE("BiasAddGrad on the CPU folds 256-row blocks in order, bit for bit", "[cpu][nn]") {
  std::mt19937 rng(11);
  for (std::int64_t channels : {16, 32, 48, 64, 1, 40, 80}) {
    INFO(channels << " channels");
    check_nhwc<float>(channels, rng);
    check_nhwc<double>(channels, rng);
    check_nhwc<bfloat16, float>(channels, rng);
  }
  // NCHW: each (image, channel) plane is one row of H * W values, summed in order, and the
  // planes of a channel fold as the NHWC rows do.
  const Tensor g = random_rows<float>(Shape{300, 2, 3, 4}, rng);
  std::vector<float> planes(300 * 2);
  for (std::int64_t p = 0; p < 600; ++p) {
    float s = 0;
    for (std::int64_t i = 0; i < 12; ++i) s += g.data<float>()[p * 12 + i];
    planes[static_cast<std::size_t>(p)] = s;
  }
  const std::vector<float> expected = block_fold(planes.data(), 300, 2);
  const Tensor got = run_op("BiasAddGrad", {g}, {{"data_format", std::string("NCHW")}})[0];
  CHECK(std::memcmp(got.data<float>(), expected.data(), expected.size() * sizeof(float)) == 0);
}
