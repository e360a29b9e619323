// The registered CPU conv kernels of all five conv ops against the reference kernels through
// run_op (backend "cpu" vs "reference") on random attributes, layouts, groups and dtypes.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <random>
#include <vector>

#include "dagrad/core/eager.hpp"
#include "dagrad/core/kernel_registry.hpp"
#include "dagrad/core/tensor.hpp"

namespace {

using namespace dagrad;
using i64 = std::int64_t;

Tensor random_tensor(std::mt19937& rng, const Shape& shape, DType dtype) {
  std::vector<float> v(static_cast<std::size_t>(shape.num_elements()));
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (auto& e : v) e = u(rng);
  return Tensor::from_values<float>(shape, std::span<const float>(v)).cast(dtype);
}

Tensor sizes(const Shape& s) {
  std::vector<std::int32_t> v;
  for (int i = 0; i < s.rank(); ++i) v.push_back(static_cast<std::int32_t>(s[i]));
  return Tensor::from_values<std::int32_t>(Shape{static_cast<i64>(v.size())}, std::span<const std::int32_t>(v));
}

double tolerance(DType d) {
  return d == DType::Float64 ? 1e-12 : d == DType::Float32 ? 1e-5 : d == DType::Half ? 2e-3 : 1.6e-2;
}

}  // namespace

TEST_CASE("cpu conv ops match the reference kernels through run_op", "[cpu][conv]") {
  std::mt19937 rng(42);
  auto pick = [&](i64 lo, i64 hi) { return std::uniform_int_distribution<i64>(lo, hi)(rng); };
  int checked = 0;
  for (int trial = 0; checked < 40 && trial < 400; ++trial) {
    const bool nchw = pick(0, 1);
    const i64 groups = std::array<i64, 3>{1, 1, 2}[pick(0, 2)];
    const i64 cg = pick(1, 6), kg = pick(1, 20), n = pick(1, 2), h = pick(1, 10), w = pick(1, 10), kh = pick(1, 3),
              kw = pick(1, 3), sh = pick(1, 2), sw = pick(1, 3), dh = pick(1, 2), dw = pick(1, 2);
    const std::string padding = std::array<const char*, 3>{"SAME", "VALID", "EXPLICIT"}[pick(0, 2)];
    std::vector<i64> explicit_paddings;
    if (padding == "EXPLICIT") {
      explicit_paddings.assign(8, 0);
      const int hpos = nchw ? 2 : 1, wpos = nchw ? 3 : 2;
      explicit_paddings[2 * hpos] = pick(0, 2), explicit_paddings[2 * hpos + 1] = pick(0, 2);
      explicit_paddings[2 * wpos] = pick(0, 2), explicit_paddings[2 * wpos + 1] = pick(0, 2);
    }
    const AttrMap attrs = {{"strides", nchw ? std::vector<i64>{1, 1, sh, sw} : std::vector<i64>{1, sh, sw, 1}},
                           {"dilations", nchw ? std::vector<i64>{1, 1, dh, dw} : std::vector<i64>{1, dh, dw, 1}},
                           {"padding", padding},
                           {"explicit_paddings", explicit_paddings},
                           {"data_format", std::string(nchw ? "NCHW" : "NHWC")}};
    const Shape in_shape = nchw ? Shape{n, groups * cg, h, w} : Shape{n, h, w, groups * cg};
    const Shape f_shape{kh, kw, cg, groups * kg};
    const DType dtype = std::array{DType::Half, DType::BFloat16, DType::Float32, DType::Float64}[pick(0, 3)];
    const Tensor x = random_tensor(rng, in_shape, dtype), f = random_tensor(rng, f_shape, dtype);
    std::vector<Tensor> y;
    try {
      y = run_op("Conv2D", {x, f}, attrs, {.name = {}, .backend = "reference"});
    } catch (const Error&) {
      continue;  // an invalid combination (e.g. VALID with a window larger than the input)
    }
    ++checked;
    const Tensor dy = random_tensor(rng, y[0].shape(), dtype);
    const std::vector<std::pair<std::string, std::vector<Tensor>>> calls = {
        {"Conv2D", {x, f}},
        {"Conv2DBackpropInput", {sizes(in_shape), f, dy}},
        {"Conv2DBackpropInputV2", {x, f, dy}},
        {"Conv2DBackpropFilter", {x, sizes(f_shape), dy}},
        {"Conv2DBackpropFilterV2", {x, f, dy}}};
    for (const auto& [op, inputs] : calls) {
      REQUIRE(kernel_registry().find(op, Device::Kind::CPU, dtype, "cpu") != nullptr);
      const Tensor want = run_op(op, inputs, attrs, {.name = {}, .backend = "reference"})[0];
      const Tensor got = run_op(op, inputs, attrs)[0];  // the default kernel must be the cpu one
      REQUIRE(got.shape() == want.shape());
      double worst = 0, scale = 0;
      for (i64 i = 0; i < want.num_elements(); ++i) {
        worst = std::max(worst, std::abs(got.value_as_double(i) - want.value_as_double(i)));
        scale = std::max(scale, std::abs(want.value_as_double(i)));
      }
      INFO(op << " " << dtype_name(dtype) << " input " << in_shape.to_string() << " filter " << f_shape.to_string()
              << " padding " << padding << " worst " << worst << " scale " << scale);
      REQUIRE(worst <= tolerance(dtype) * std::max(scale, 1e-30));
    }
  }
  REQUIRE(checked == 40);
}

TEST_CASE("the cpu backend outranks the reference for the conv ops", "[cpu][conv]") {
  for (const char* op : {"Conv2D", "Conv2DBackpropInputV2", "Conv2DBackpropFilterV2"}) {
    REQUIRE(kernel_registry().get(op, Device::Kind::CPU, DType::Float32).backend == "cpu");
  }
}
