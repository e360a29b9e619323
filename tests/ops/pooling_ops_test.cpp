// MaxPool, AvgPool and their gradients against hand-computed windows, SAME and VALID, NHWC and NCHW.
#include <catch2/catch.hpp>

#include <numeric>

#include <dagrad/dagrad.hpp>

using namespace dagrad;

namespace {

Tensor iota_4x4(bool nchw) {
  std::vector<float> v(16);
  std::iota(v.begin(), v.end(), 0.f);
  return Tensor::from_values<float>(nchw ? Shape{1, 1, 4, 4} : Shape{1, 4, 4, 1}, v);
}

AttrMap pool(std::vector<std::int64_t> k, std::vector<std::int64_t> s, const char* padding, const char* format) {
  return {{"ksize", k}, {"strides", s}, {"padding", std::string(padding)}, {"data_format", std::string(format)}};
}

std::vector<double> values(const Tensor& t) {
  std::vector<double> v;
  for (std::int64_t i = 0; i < t.num_elements(); ++i) v.push_back(t.value_as_double(i));
  return v;
}

}  // namespace

TEST_CASE("MaxPool and AvgPool windows, SAME and VALID, in both formats", "[nn]") {
  for (const char* backend : {"reference", ""}) {
    for (bool nchw : {false, true}) {
      INFO("backend '" << backend << "' nchw " << nchw);
      const char* f = nchw ? "NCHW" : "NHWC";
      const std::vector<std::int64_t> k2 = nchw ? std::vector<std::int64_t>{1, 1, 2, 2} : std::vector<std::int64_t>{1, 2, 2, 1};
      const std::vector<std::int64_t> k3 = nchw ? std::vector<std::int64_t>{1, 1, 3, 3} : std::vector<std::int64_t>{1, 3, 3, 1};
      const EagerOptions opt{.backend = backend};
      Tensor y = run_op("MaxPool", {iota_4x4(nchw)}, pool(k2, k2, "VALID", f), opt)[0];
      CHECK(y.shape() == (nchw ? Shape{1, 1, 2, 2} : Shape{1, 2, 2, 1}));
      CHECK(values(y) == std::vector<double>{5, 7, 13, 15});
      // SAME 3x3 stride 2 on 4x4: 2x2 outputs, one padded row/column at the bottom/right.
      CHECK(values(run_op("MaxPool", {iota_4x4(nchw)}, pool(k3, k2, "SAME", f), opt)[0]) ==
            std::vector<double>{10, 11, 14, 15});
      // AvgPool's SAME windows average only the elements inside the input.
      CHECK(values(run_op("AvgPool", {iota_4x4(nchw)}, pool(k3, k2, "SAME", f), opt)[0]) ==
            std::vector<double>{5, 6.5, 11, 12.5});
    }
  }
}

TEST_CASE("pool gradients route to the first maximum and spread averages", "[nn]") {
  const AttrMap attrs = pool({1, 2, 2, 1}, {1, 2, 2, 1}, "VALID", "NHWC");
  const Tensor ties = Tensor::full(DType::Float32, Shape{1, 2, 2, 1}, 1.0);
  const Tensor grad = Tensor::full(DType::Float32, Shape{1, 1, 1, 1}, 7.0);
  for (const char* backend : {"reference", ""}) {
    INFO("backend '" << backend << "'");
    const EagerOptions opt{.backend = backend};
    CHECK(values(run_op("MaxPoolGrad", {ties, Tensor::full(DType::Float32, Shape{1, 1, 1, 1}, 1.0), grad}, attrs, opt)[0]) ==
          std::vector<double>{7, 0, 0, 0});
    const Tensor x = Tensor::from_values<float>(Shape{1, 2, 2, 1}, {1, 3, 2, 0});
    CHECK(values(run_op("MaxPoolGrad", {x, Tensor::full(DType::Float32, Shape{1, 1, 1, 1}, 3.0), grad}, attrs, opt)[0]) ==
          std::vector<double>{0, 7, 0, 0});
    const Tensor gg = Tensor::from_values<float>(Shape{1, 2, 2, 1}, {10, 20, 30, 40});
    CHECK(values(run_op("MaxPoolGradGrad", {x, Tensor::full(DType::Float32, Shape{1, 1, 1, 1}, 3.0), gg}, attrs, opt)[0]) ==
          std::vector<double>{20});
    const Tensor dims = Tensor::from_values<std::int32_t>(Shape{4}, {1, 2, 2, 1});
    CHECK(values(run_op("AvgPoolGrad", {dims, Tensor::full(DType::Float32, Shape{1, 1, 1, 1}, 8.0)}, attrs, opt)[0]) ==
          std::vector<double>{2, 2, 2, 2});
  }
}

TEST_CASE("pool attribute and shape errors use TF's wording", "[nn]") {
  const Tensor x = iota_4x4(false);
  CHECK_THROWS_WITH(run_op("MaxPool", {x}, pool({1, 2, 2}, {1, 2, 2, 1}, "VALID", "NHWC")),
                    Catch::Contains("Sliding window ksize field must specify 4 dimensions"));
  CHECK_THROWS_WITH(run_op("MaxPool", {x}, pool({2, 2, 2, 1}, {1, 2, 2, 1}, "VALID", "NHWC")),
                    Catch::Contains("Pooling is not yet supported on the batch dimension."));
  CHECK_THROWS_WITH(run_op("AvgPool", {x}, pool({1, 5, 5, 1}, {1, 1, 1, 1}, "VALID", "NHWC")),
                    Catch::Contains("Computed output size would be negative"));
  CHECK_THROWS_WITH(run_op("MaxPool", {x}, pool({1, 2, 2, 1}, {1, 0, 2, 1}, "VALID", "NHWC")),
                    Catch::Contains("must be positive"));
  CHECK_THROWS_WITH(run_op("MaxPool", {x}, pool({1, 2, 2, 1}, {1, 2, 2, 1}, "FULL", "NHWC")),
                    Catch::Contains("is not in the list of allowed values"));
  CHECK_THROWS_WITH(run_op("MaxPoolGrad", {x, x, x}, pool({1, 2, 2, 1}, {1, 2, 2, 1}, "VALID", "NHWC")),
                    Catch::Contains("Expected orig_output shape to be [1,2,2,1], but got [1,4,4,1]"));
}
