// MaxPool, AvgPool and their gradients against hand-computed windows, SAME and VALID, NHWC and NCHW.
#include <catch2/catch.hpp>

#include <limits>
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
      const std::vector<std::int64_t> k2 =
          nchw ? std::vector<std::int64_t>{1, 1, 2, 2} : std::vector<std::int64_t>{1, 2, 2, 1};
      const std::vector<std::int64_t> k3 =
          nchw ? std::vector<std::int64_t>{1, 1, 3, 3} : std::vector<std::int64_t>{1, 3, 3, 1};
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
    CHECK(values(run_op("MaxPoolGrad", {ties, Tensor::full(DType::Float32, Shape{1, 1, 1, 1}, 1.0), grad}, attrs,
                        opt)[0]) == std::vector<double>{7, 0, 0, 0});
    const Tensor x = Tensor::from_values<float>(Shape{1, 2, 2, 1}, {1, 3, 2, 0});
    CHECK(values(run_op("MaxPoolGrad", {x, Tensor::full(DType::Float32, Shape{1, 1, 1, 1}, 3.0), grad}, attrs,
                        opt)[0]) == std::vector<double>{0, 7, 0, 0});
    const Tensor gg = Tensor::from_values<float>(Shape{1, 2, 2, 1}, {10, 20, 30, 40});
    CHECK(values(run_op("MaxPoolGradGrad", {x, Tensor::full(DType::Float32, Shape{1, 1, 1, 1}, 3.0), gg}, attrs,
                        opt)[0]) == std::vector<double>{20});
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
  CHECK_THROWS_WITH(run_op("AvgPool", {x}, pool({1, 6, 6, 1}, {1, 1, 1, 1}, "VALID", "NHWC")),
                    Catch::Contains("Computed output size would be negative"));
  // TF's GetWindowedOutputSize: (4 - 5 + 1) / 1 = 0 is an empty output, not an error.
  CHECK(run_op("AvgPool", {x}, pool({1, 5, 5, 1}, {1, 1, 1, 1}, "VALID", "NHWC"))[0].shape() == Shape{1, 0, 0, 1});
  CHECK_THROWS_WITH(run_op("MaxPool", {x}, pool({1, 2, 2, 1}, {1, 0, 2, 1}, "VALID", "NHWC")),
                    Catch::Contains("must be positive"));
  CHECK_THROWS_WITH(run_op("MaxPool", {x}, pool({1, 2, 2, 1}, {1, 2, 2, 1}, "FULL", "NHWC")),
                    Catch::Contains("is not in the list of allowed values"));
  CHECK_THROWS_WITH(run_op("MaxPoolGrad", {x, x, x}, pool({1, 2, 2, 1}, {1, 2, 2, 1}, "VALID", "NHWC")),
                    Catch::Contains("Expected orig_output shape to be [1,2,2,1], but got [1,4,4,1]"));
}

TEST_CASE("MaxPool and its gradients with EXPLICIT padding", "[nn]") {
  for (const char* backend : {"reference", ""}) {
    for (bool nchw : {false, true}) {
      INFO("backend '" << backend << "' nchw " << nchw);
      const EagerOptions opt{.backend = backend};
      const char* f = nchw ? "NCHW" : "NHWC";
      const std::vector<std::int64_t> k3 =
          nchw ? std::vector<std::int64_t>{1, 1, 3, 3} : std::vector<std::int64_t>{1, 3, 3, 1};
      const std::vector<std::int64_t> s2 =
          nchw ? std::vector<std::int64_t>{1, 1, 2, 2} : std::vector<std::int64_t>{1, 2, 2, 1};
      // Two padded rows on top and two padded columns on the right of the 4x4 iota: padded 6x6,
      // windows 3x3 stride 2 -> 2x2 outputs; the first row of windows sees input row 0 only.
      AttrMap attrs = pool(k3, s2, "EXPLICIT", f);
      attrs["explicit_paddings"] =
          nchw ? std::vector<std::int64_t>{0, 0, 0, 0, 2, 0, 0, 2} : std::vector<std::int64_t>{0, 0, 2, 0, 0, 2, 0, 0};
      const Tensor x = iota_4x4(nchw);
      const Tensor y = run_op("MaxPool", {x}, attrs, opt)[0];
      CHECK(y.shape() == (nchw ? Shape{1, 1, 2, 2} : Shape{1, 2, 2, 1}));
      CHECK(values(y) == std::vector<double>{2, 3, 10, 11});
      const Tensor grad = Tensor::from_values<float>(y.shape(), {1, 2, 3, 4});
      std::vector<double> dx(16, 0.0);
      dx[2] = 1, dx[3] = 2, dx[10] = 3, dx[11] = 4;
      CHECK(values(run_op("MaxPoolGrad", {x, y, grad}, attrs, opt)[0]) == dx);
      std::vector<float> gg(16);
      std::iota(gg.begin(), gg.end(), 100.f);
      CHECK(values(run_op("MaxPoolGradGrad", {x, y, Tensor::from_values<float>(x.shape(), gg)}, attrs, opt)[0]) ==
            std::vector<double>{102, 103, 110, 111});
      // Zero padding through EXPLICIT equals VALID.
      AttrMap zero = pool(k3, s2, "EXPLICIT", f);
      zero["explicit_paddings"] = std::vector<std::int64_t>(8, 0);
      CHECK(values(run_op("MaxPool", {x}, zero, opt)[0]) ==
            values(run_op("MaxPool", {x}, pool(k3, s2, "VALID", f), opt)[0]));
    }
  }
}

TEST_CASE("MaxPool over an empty input with EXPLICIT padding gives the lowest value", "[nn]") {
  AttrMap attrs = pool({1, 2, 2, 1}, {1, 1, 1, 1}, "EXPLICIT", "NHWC");
  attrs["explicit_paddings"] = std::vector<std::int64_t>{0, 0, 1, 1, 1, 1, 0, 0};
  const Tensor x = Tensor::empty(DType::Float32, Shape{1, 0, 0, 2});
  for (const char* backend : {"reference", ""}) {
    INFO("backend '" << backend << "'");
    const Tensor y = run_op("MaxPool", {x}, attrs, {.backend = backend})[0];
    REQUIRE(y.shape() == (Shape{1, 1, 1, 2}));
    CHECK(values(y) == std::vector<double>(2, std::numeric_limits<float>::lowest()));
    CHECK(run_op("MaxPoolGrad", {x, y, y}, attrs, {.backend = backend})[0].num_elements() == 0);
    CHECK(values(run_op("MaxPoolGradGrad", {x, y, x}, attrs, {.backend = backend})[0]) == std::vector<double>(2, 0.0));
  }
}

TEST_CASE("EXPLICIT padding errors use TF's wording", "[nn]") {
  const Tensor x = iota_4x4(false);
  const auto with = [](const char* padding, std::vector<std::int64_t> paddings) {
    AttrMap a = pool({1, 3, 3, 1}, {1, 1, 1, 1}, padding, "NHWC");
    a["explicit_paddings"] = std::move(paddings);
    return a;
  };
  CHECK_THROWS_WITH(run_op("MaxPool", {x}, with("EXPLICIT", {0, 0, 1, 1, 1, 1})),
                    Catch::Contains("MaxPool: explicit_paddings attribute must contain 8 values, but got: 6"));
  CHECK_THROWS_WITH(run_op("MaxPool", {x}, with("EXPLICIT", {0, 0, 1, -1, 1, 1, 0, 0})),
                    Catch::Contains("All elements of explicit_paddings must be nonnegative"));
  CHECK_THROWS_WITH(run_op("MaxPool", {x}, with("EXPLICIT", {1, 0, 1, 1, 1, 1, 0, 0})),
                    Catch::Contains("Nonzero explicit padding in the batch or depth dimensions is not supported"));
  CHECK_THROWS_WITH(run_op("MaxPool", {x}, with("EXPLICIT", {0, 0, 1, 1, 1, 1, 0, 1})),
                    Catch::Contains("Nonzero explicit padding in the batch or depth dimensions is not supported"));
  CHECK_THROWS_WITH(
      run_op("MaxPool", {x}, with("VALID", {0, 0, 1, 1, 1, 1, 0, 0})),
      Catch::Contains("explicit_paddings attribute must be empty if the padding attribute is not EXPLICIT"));
  CHECK_THROWS_WITH(run_op("MaxPool", {x}, with("EXPLICIT", {0, 0, 3, 0, 0, 0, 0, 0})),
                    Catch::Contains("MaxPool: Top padding 3 needs to be smaller than the window size 3"));
  CHECK_THROWS_WITH(run_op("MaxPoolGrad", {x, x, x}, with("EXPLICIT", {0, 0, 0, 0, 0, 4, 0, 0})),
                    Catch::Contains("MaxPoolGrad: Right padding 4 needs to be smaller than the window size 3"));
  // AvgPool has no EXPLICIT padding in TF, and no explicit_paddings attribute.
  CHECK_THROWS_WITH(run_op("AvgPool", {x}, pool({1, 3, 3, 1}, {1, 1, 1, 1}, "EXPLICIT", "NHWC")),
                    Catch::Contains("is not in the list of allowed values"));
  CHECK_THROWS(run_op("AvgPool", {x}, with("VALID", {})));
  // A padded size still smaller than the window.
  AttrMap big = pool({1, 7, 1, 1}, {1, 1, 1, 1}, "EXPLICIT", "NHWC");
  big["explicit_paddings"] = std::vector<std::int64_t>{0, 0, 0, 1, 0, 0, 0, 0};
  CHECK_THROWS_WITH(run_op("MaxPool", {x}, big), Catch::Contains("Computed output size would be negative"));
}
