// Every op but the convolutions on hostile shapes and attributes: empty outputs or inputs whose
// other dims are huge (no hang, no overflow, CPU equal to the reference), outputs larger than the
// memory limit (ResourceExhausted naming the op, the output and the byte count, before anything is
// allocated), and out-of-range values refused by name.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include <dagrad/dagrad.hpp>

#include "dagrad/core/memory_limit.hpp"
#include "support/error_of.hpp"

using namespace dagrad;
using dagrad::testing::error_of;

namespace {

constexpr std::int64_t kHuge = 10'000'000'000;  // 10^10: two of them overflow int64

Tensor i64(std::vector<std::int64_t> v) {
  const auto n = static_cast<std::int64_t>(v.size());
  return Tensor::from_values<std::int64_t>(Shape{n}, v);
}

Tensor ramp(const Shape& shape) {
  std::vector<float> v(static_cast<std::size_t>(shape.num_elements()));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>((i * 37) % 11) - 5.f;
  return Tensor::from_values<float>(shape, v);
}

// Runs op on both backends; both must give `expected` and the same values (NaN equal to NaN).
void check_both(const std::string& op, const std::vector<Tensor>& inputs, const AttrMap& attrs, const Shape& expected) {
  const Tensor ref = run_op(op, inputs, attrs, {.backend = "reference"})[0];
  const Tensor cpu = run_op(op, inputs, attrs, {.backend = "cpu"})[0];
  REQUIRE(ref.shape() == expected);
  REQUIRE(cpu.shape() == expected);
  for (std::int64_t i = 0; i < ref.num_elements(); ++i) {
    const double r = ref.value_as_double(i), c = cpu.value_as_double(i);
    INFO(op << " element " << i << ": reference " << r << ", cpu " << c);
    CHECK((std::isnan(r) ? std::isnan(c) : r == c));
  }
}

// Restores the default memory limit however the test ends.
struct MemoryLimitScope {
  explicit MemoryLimitScope(std::int64_t bytes) { set_memory_limit(bytes); }
  ~MemoryLimitScope() { set_memory_limit(0); }
};

}  // namespace

TEST_CASE("empty outputs with a huge dim return at once on every backend", "[hostile]") {
  // Each of these once looped over rows of nothing (for hours) or multiplied the empty input's
  // dims past int64 (UBSan) before noticing that there was nothing to compute.
  const Tensor wide = Tensor::zeros(DType::Float32, Shape{0, kHuge, kHuge});
  const Tensor tall = Tensor::zeros(DType::Float32, Shape{1'000'000'000'000'000'000, 0});
  check_both("BiasAddGrad", {tall}, {}, Shape{0});
  check_both("BiasAdd", {tall, Tensor::zeros(DType::Float32, Shape{0})}, {}, tall.shape());
  check_both("Relu", {wide}, {}, wide.shape());
  check_both("Softmax", {tall}, {}, tall.shape());
  check_both("AddV2", {wide, ramp(Shape{1})}, {}, wide.shape());
  check_both("Mul", {ramp(Shape{7}), Tensor::zeros(DType::Float32, Shape{kHuge, 0, 1})}, {}, Shape{kHuge, 0, 7});
  check_both("Equal", {wide, ramp(Shape{1})}, {}, wide.shape());
  check_both("Transpose", {wide, i64({0, 2, 1})}, {}, wide.shape());
  // As in TF, a shape's element count is taken left to right: [kHuge, kHuge, 0] overflows.
  CHECK_THAT(error_of([&] {
               run_op("Transpose", {wide, i64({2, 1, 0})});
             }),
             Catch::StartsWith("Transpose: output 0: ") && Catch::Contains("integer overflow"));
  check_both("BroadcastTo", {wide, i64({1, 0, kHuge, kHuge})}, {}, Shape{1, 0, kHuge, kHuge});
  check_both("ArgMax", {Tensor::zeros(DType::Float32, Shape{0, 5, kHuge, kHuge}), Tensor::scalar<std::int32_t>(1)}, {},
             Shape{0, kHuge, kHuge});
  check_both("MatMul", {tall, Tensor::zeros(DType::Float32, Shape{0, 0})}, {}, Shape{1'000'000'000'000'000'000, 0});
  check_both("Sum", {wide, i64({1})}, {}, Shape{0, kHuge});
}

TEST_CASE("ops over an empty input with huge dims give TF's empty sums", "[hostile]") {
  // The output is small, so the kernels run; the empty input's dims multiply past int64 in any
  // order but the one its shape was checked in.
  const Tensor x = Tensor::zeros(DType::Float32, Shape{2, 0, 3, kHuge, kHuge});
  for (bool keep : {false, true}) {
    const Shape out = keep ? Shape{2, 1, 3, 1, 1} : Shape{2, 3};
    check_both("Sum", {x, i64({1, 3, 4})}, {{"keep_dims", keep}}, out);
    check_both("Mean", {x, i64({1, 3, 4})}, {{"keep_dims", keep}}, out);  // 0 / 0: NaN, as TF
    check_both("Mean", {Tensor::zeros(DType::Int32, x.shape()), i64({4, 1, 3})}, {{"keep_dims", keep}}, out);
  }
  // BiasAddGrad of an empty gradient: zeros per channel, without a pass over kHuge^2 rows.
  check_both("BiasAddGrad", {Tensor::zeros(DType::Float32, Shape{0, 3, kHuge, kHuge})},
             {{"data_format", std::string("NCHW")}}, Shape{3});
  check_both("BiasAddGrad", {Tensor::zeros(DType::Float32, Shape{kHuge, 0, 4})}, {}, Shape{4});
}

TEST_CASE("outputs beyond the memory limit are refused before allocation", "[hostile]") {
  const Tensor one = Tensor::scalar<float>(1.f);
  {
    const MemoryLimitScope limit(1 << 20);
    CHECK(memory_limit() == (1 << 20));
    CHECK(run_op("BroadcastTo", {one, i64({256, 1024})})[0].shape() == Shape{256, 1024});  // exactly 1 MiB
    try {
      run_op("BroadcastTo", {one, i64({1000, 1000})}, {}, {.name = "big"});
      FAIL("no error");
    } catch (const Error& e) {
      CHECK(e.code() == Code::ResourceExhausted);
      CHECK_THAT(
          std::string(e.what()),
          Catch::Equals("BroadcastTo: output 0: OOM when allocating tensor with shape [1000,1000] and type float "
                        "on cpu: 4000000 bytes exceed the memory limit of 1048576 bytes "
                        "(dagrad::set_memory_limit) (node 'big')"));
    }
    CHECK_THAT(error_of([] { Tensor::zeros(DType::Float64, Shape{1 << 20}); }),
               Catch::Contains("OOM when allocating tensor with shape [1048576] and type double") &&
                   Catch::Contains("8388608 bytes exceed the memory limit of 1048576 bytes"));
  }
  CHECK(memory_limit() == physical_memory_bytes());
  CHECK(physical_memory_bytes() > (std::int64_t{1} << 26));
  // 16 bytes of orig_input_shape ask for 2^62 bytes: refused by the default limit, not by malloc.
  const std::int32_t side = 1 << 30;
  const AttrMap pool = {{"ksize", std::vector<std::int64_t>{1, side, side, 1}},
                        {"strides", std::vector<std::int64_t>{1, side, side, 1}},
                        {"padding", std::string("VALID")}};
  const std::string message = error_of([&] {
    run_op("AvgPoolGrad", {Tensor::from_values<std::int32_t>(Shape{4}, {1, side, side, 1}), ramp(Shape{1, 1, 1, 1})},
           pool);
  });
  CHECK_THAT(message, Catch::StartsWith("AvgPoolGrad: output 0: OOM when allocating tensor with shape "
                                        "[1,1073741824,1073741824,1] and type float on cpu: "
                                        "4611686018427387904 bytes exceed the memory limit of "));
  // More bytes than int64 counts.
  CHECK_THAT(error_of([&] {
               run_op("BroadcastTo", {one, i64({std::int64_t{1} << 61})});
             }),
             Catch::Contains("BroadcastTo: output 0: OOM") && Catch::Contains("more than 2**63 - 1 bytes"));
  CHECK_THAT(error_of([&] {
               run_op("BroadcastTo", {one, i64({kHuge, kHuge})});
             }),
             Catch::Contains("BroadcastTo: output 0: ") && Catch::Contains("overflow"));
  CHECK_THAT(error_of([] { set_memory_limit(-1); }), Catch::Contains("set_memory_limit") && Catch::Contains("-1"));
}

TEST_CASE("hostile values are refused by name", "[hostile]") {
  const Tensor x = ramp(Shape{2, 3});
  const auto require_error = [](const std::function<void()>& f, Code code, std::vector<std::string> parts) {
    try {
      f();
      FAIL("no error");
    } catch (const Error& e) {
      INFO(e.what());
      CHECK(e.code() == code);
      for (const auto& p : parts) CHECK_THAT(std::string(e.what()), Catch::Contains(p));
    }
  };
  constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  const auto invalid = Code::InvalidArgument;
  require_error([&] { run_op("Reshape", {x, i64({kHuge, kHuge})}); }, Code::OutOfRange, {"Reshape: ", "overflow"});
  require_error(
      [&] {
        run_op("Reshape", {x, i64({kMin, -6})});
      },
      invalid, {"Reshape: ", "Size 0 must be non-negative, not -9223372036854775808"});
  require_error(
      [&] {
        run_op("Reshape", {Tensor::zeros(DType::Float32, Shape{0}), i64({0, -1})});
      },
      invalid, {"Reshape cannot infer the missing input size"});
  CHECK(run_op("Reshape", {Tensor::zeros(DType::Float32, Shape{0}), i64({kMax, -1})})[0].shape() == Shape{kMax, 0});
  require_error(
      [&] {
        run_op("Transpose", {x, i64({kMin, 0})});
      },
      invalid, {"Transpose: perm[0] = -9223372036854775808"});
  require_error([&] { run_op("Transpose", {x, i64({1, 1})}); }, invalid, {"Transpose: perm has 1 more than once"});
  require_error([&] { run_op("Transpose", {x, i64({0, 1, 2})}); }, invalid, {"Transpose: ", "vector of size 2"});
  require_error(
      [&] {
        run_op("ArgMax", {x, Tensor::scalar<std::int64_t>(kMin)});
      },
      invalid, {"ArgMax: Expected dimension in the range [-2, 2), but got -9223372036854775808"});
  require_error(
      [&] {
        run_op("ArgMax",
               {Tensor::zeros(DType::Float32, Shape{0, std::int64_t{1} << 31}), Tensor::scalar<std::int64_t>(1)},
               {{"output_type", DType::Int32}});
      },
      invalid, {"ArgMax: output_type int32 cannot index axis 1 of size 2147483648"});
  require_error(
      [&] {
        run_op("Sum", {x, i64({kMax})});
      },
      invalid, {"Sum: Invalid reduction dimension (9223372036854775807 for input with 2 dimension(s)"});
  require_error([&] { run_op("Mean", {x, i64({kMin})}); }, invalid, {"Mean: Invalid reduction dimension"});
  require_error([&] { run_op("BroadcastTo", {x, i64({kMin, 3})}); }, invalid, {"BroadcastTo: ", "negative dimension"});
  require_error([&] { run_op("BroadcastTo", {x, i64({3})}); }, invalid, {"BroadcastTo: Rank of input (2)"});
  require_error(
      [&] {
        run_op("BroadcastGradientArgs", {i64({-5}), i64({3})});
      },
      invalid, {"BroadcastGradientArgs: Incompatible shapes: [-5] vs. [3]"});
  require_error([&] { run_op("MatMul", {x, ramp(Shape{2, 3, 1})}); }, invalid, {"MatMul: In[1] is not a matrix"});
  require_error(
      [&] {
        run_op("BiasAdd", {ramp(Shape{3}), ramp(Shape{3})});
      },
      invalid, {"BiasAdd: Input tensor must be at least 2D"});
  require_error(
      [&] {
        run_op("SparseSoftmaxCrossEntropyWithLogits", {x, Tensor::from_values<std::int64_t>(Shape{2}, {0, kMin})});
      },
      invalid, {"SparseSoftmaxCrossEntropyWithLogits: Received a label value of -9223372036854775808"});
  require_error(
      [&] {
        run_op("Shape", {Tensor::zeros(DType::Float32, Shape{0, std::int64_t{1} << 40})});
      },
      invalid, {"Shape: value 1099511627776 at index 1 does not fit in int32"});
  // AvgPoolGrad's orig_input_shape: a negative or misplaced dim.
  const AttrMap pool = {{"ksize", std::vector<std::int64_t>{1, 1, 1, 1}},
                        {"strides", std::vector<std::int64_t>{1, 1, 1, 1}},
                        {"padding", std::string("VALID")}};
  require_error(
      [&] {
        run_op("AvgPoolGrad", {Tensor::from_values<std::int32_t>(Shape{4}, {1, -2, 2, 1}), ramp(Shape{1, 2, 2, 1})},
               pool);
      },
      invalid, {"AvgPoolGrad: orig_input_shape has a negative dimension: [1, -2, 2, 1]"});
  require_error(
      [&] {
        run_op("AvgPoolGrad", {Tensor::zeros(DType::Int32, Shape{3}), ramp(Shape{1, 1, 1, 1})}, pool);
      },
      invalid, {"AvgPoolGrad: orig_input_shape must be 1-dimensional and 4 elements"});
}

TEST_CASE("a shape input cannot ask for more than 254 dimensions", "[hostile]") {
  // Found by fuzz_attrs: an unknown shape vector of 222 million elements made BroadcastTo's shape
  // function allocate 222 million dims before anything said no.
  Graph g;
  Output x = ops::placeholder(g, DType::Float32, Shape{2}, "x");
  Output huge = ops::placeholder(g, DType::Int32, Shape{222337222}, "huge");
  CHECK_THAT(error_of([&] { ops::broadcast_to(g, x, huge); }),
             Catch::Contains("BroadcastTo: 'shape' has 222337222 elements, but a shape has at most 254 dimensions"));
  CHECK_THAT(error_of([&] { ops::reshape(g, x, huge); }), Catch::Contains("at most 254 dimensions"));
  Output rank_255 = ops::placeholder(g, DType::Int32, Shape{255}, "rank_255");
  CHECK_THAT(error_of([&] { ops::broadcast_to(g, x, rank_255); }), Catch::Contains("at most 254 dimensions"));
  Output rank_254 = ops::placeholder(g, DType::Int32, Shape{254}, "rank_254");
  CHECK(g.node(ops::broadcast_to(g, x, rank_254).node).output_shapes[0].rank() == 254);
}

TEST_CASE("no op output has more than 254 dimensions", "[hostile]") {
  const Tensor x = Tensor::zeros(DType::Float32, Shape(std::vector<std::int64_t>(255, 1)));
  CHECK_THAT(error_of([&] { run_op("Neg", {x}); }), Catch::Contains("Neg: output 0 would have 255 dimensions"));
}
