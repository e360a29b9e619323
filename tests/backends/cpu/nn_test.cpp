// The CPU backend's nn/pooling/matmul kernels against the reference kernels on random shapes
// and attributes, and bitwise-identical results for 1 and 4 threads.
#include <catch2/catch.hpp>

#include <random>

#include <dagrad/dagrad.hpp>

using namespace dagrad;

namespace {

Tensor random_tensor(DType dtype, Shape shape, std::mt19937& rng) {
  Tensor t = Tensor::empty(DType::Float64, shape);
  std::normal_distribution<double> dist(0, 1);
  for (std::int64_t i = 0; i < t.num_elements(); ++i) t.data<double>()[i] = dist(rng);
  return t.cast(dtype);
}

struct Case {
  std::string op;
  std::vector<Tensor> inputs;
  AttrMap attrs;
};

// Compares the fastest kernel with the reference one, and the fastest kernel with itself on 1
// and 4 threads (bitwise).
void check_case(const Case& c) {
  INFO(c.op << " on " << c.inputs[0].shape() << " " << dtype_name(c.inputs[0].dtype()));
  const auto* def = kernel_registry().find(c.op, Device::Kind::CPU, c.inputs[0].dtype(), "cpu");
  REQUIRE(def != nullptr);
  const auto ref = run_op(c.op, c.inputs, c.attrs, {.backend = "reference"});
  set_num_threads(1);
  const auto one = run_op(c.op, c.inputs, c.attrs, {.backend = "cpu"});
  set_num_threads(4);
  const auto four = run_op(c.op, c.inputs, c.attrs, {.backend = "cpu"});
  set_num_threads(0);
  const double tol = c.inputs[0].dtype() == DType::Float32 ? 2e-5 : 1e-12;
  for (std::size_t k = 0; k < ref.size(); ++k) {
    REQUIRE(one[k].shape() == ref[k].shape());
    CHECK(std::memcmp(one[k].raw_data(), four[k].raw_data(), one[k].nbytes()) == 0);
    double worst = 0;
    for (std::int64_t i = 0; i < ref[k].num_elements(); ++i) {
      const double r = ref[k].value_as_double(i), f = one[k].value_as_double(i);
      worst = std::max(worst, std::abs(r - f) / std::max(1.0, std::abs(r)));
    }
    CHECK(worst <= tol * 10);
  }
}

}  // namespace

TEST_CASE("CPU nn kernels match the reference kernels", "[cpu][nn]") {
  std::mt19937 rng(1234);
  for (DType dtype : {DType::Float32, DType::Float64}) {
    for (int trial = 0; trial < 4; ++trial) {
      std::uniform_int_distribution<std::int64_t> small(1, 9);
      const std::int64_t n = small(rng), h = small(rng) + 3, w = small(rng) + 3, ch = small(rng);
      const Shape nhwc{n, h, w, ch}, nchw{n, ch, h, w};
      const char* format = trial % 2 ? "NCHW" : "NHWC";
      const Shape x_shape = trial % 2 ? nchw : nhwc;
      check_case({"BiasAdd",
                  {random_tensor(dtype, x_shape, rng), random_tensor(dtype, Shape{ch}, rng)},
                  {{"data_format", format}}});
      check_case({"BiasAddGrad", {random_tensor(dtype, Shape{n * 300, ch}, rng)}, {}});
      check_case({"BiasAddGrad", {random_tensor(dtype, x_shape, rng)}, {{"data_format", format}}});
      check_case({"Relu", {random_tensor(dtype, x_shape, rng)}, {}});
      check_case({"ReluGrad", {random_tensor(dtype, x_shape, rng), random_tensor(dtype, x_shape, rng)}, {}});
      const std::int64_t k = 1 + trial % 3, s = 1 + (trial + 1) % 2;
      const std::vector<std::int64_t> ksize =
          trial % 2 ? std::vector<std::int64_t>{1, 1, k, k} : std::vector<std::int64_t>{1, k, k, 1};
      const std::vector<std::int64_t> strides =
          trial % 2 ? std::vector<std::int64_t>{1, 1, s, s} : std::vector<std::int64_t>{1, s, s, 1};
      for (const char* padding : {"SAME", "VALID"}) {
        const AttrMap pool = {{"ksize", ksize},
                              {"strides", strides},
                              {"padding", std::string(padding)},
                              {"data_format", std::string(format)}};
        const Tensor x = random_tensor(dtype, x_shape, rng);
        check_case({"MaxPool", {x}, pool});
        check_case({"AvgPool", {x}, pool});
        const Tensor y = run_op("MaxPool", {x}, pool)[0];
        check_case({"MaxPoolGrad", {x, y, random_tensor(dtype, y.shape(), rng)}, pool});
      }
      const std::int64_t m = small(rng) * 7, kk = small(rng) * 50, nn = small(rng) * 5;
      for (bool ta : {false, true}) {
        for (bool tb : {false, true}) {
          check_case({"MatMul",
                      {random_tensor(dtype, ta ? Shape{kk, m} : Shape{m, kk}, rng),
                       random_tensor(dtype, tb ? Shape{nn, kk} : Shape{kk, nn}, rng)},
                      {{"transpose_a", ta}, {"transpose_b", tb}}});
        }
      }
      check_case({"Softmax", {random_tensor(dtype, Shape{m, nn}, rng)}, {}});
      check_case({"LogSoftmax", {random_tensor(dtype, Shape{m, nn}, rng)}, {}});
      std::vector<std::int32_t> labels(static_cast<std::size_t>(m));
      for (auto& l : labels) l = static_cast<std::int32_t>(rng() % static_cast<std::uint32_t>(nn));
      check_case({"SparseSoftmaxCrossEntropyWithLogits",
                  {random_tensor(dtype, Shape{m, nn}, rng), Tensor::from_values<std::int32_t>(Shape{m}, labels)},
                  {}});
    }
  }
}
