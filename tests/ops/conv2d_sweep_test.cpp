// Random sweeps over every Conv2D attribute: the reference kernels against an independent
// oracle, the adjoint identities <Conv2D(x,w),dy> = <w,dW> = <x,dX>, layout invariance, and the
// documented half/bfloat16/float tolerance with respect to float64.
#include <catch2/catch.hpp>

#include <cmath>

#include "conv_test_util.hpp"

using namespace dagrad;
using namespace conv_test;

namespace {

struct Case {
  std::string format, padding;
  std::int64_t batch, rows, cols, groups, filter_in, out_depth, kh, kw;
  std::int64_t stride_r, stride_c, dil_r, dil_c;
  std::int64_t top, bottom, left, right;  // EXPLICIT: the attribute; SAME: derived; VALID: 0

  ops::Conv2DOptions options() const {
    ops::Conv2DOptions o{.strides = spatial(format, stride_r, stride_c),
                         .padding = padding,
                         .data_format = format,
                         .dilations = spatial(format, dil_r, dil_c)};
    if (padding == "EXPLICIT") {
      o.explicit_paddings = format == "NHWC" ? std::vector<std::int64_t>{0, 0, top, bottom, left, right, 0, 0}
                                             : std::vector<std::int64_t>{0, 0, 0, 0, top, bottom, left, right};
    }
    return o;
  }
  std::string describe() const {
    return str_cat(format, " ", padding, " x[", batch, ",", rows, ",", cols, ",", groups * filter_in, "] w[", kh, ",",
                   kw, ",", filter_in, ",", out_depth, "] strides ", stride_r, ",", stride_c, " dilations ", dil_r, ",",
                   dil_c, " pads ", top, ",", bottom, ",", left, ",", right);
  }
};

// A random case with a non-negative output size; SAME pads follow TF's rule, restated here.
Case random_case(std::mt19937_64& rng) {
  auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  for (;;) {
    Case c;
    c.format = pick(0, 1) ? "NHWC" : "NCHW";
    c.padding = std::array<const char*, 3>{"SAME", "VALID", "EXPLICIT"}[static_cast<std::size_t>(pick(0, 2))];
    c.batch = pick(0, 9) == 0 ? 0 : pick(1, 2);
    c.rows = pick(1, 8), c.cols = pick(1, 8);
    c.groups = pick(1, 3), c.filter_in = pick(1, 3), c.out_depth = c.groups * pick(1, 3);
    c.kh = pick(1, 3), c.kw = pick(1, 3);
    c.stride_r = pick(1, 3), c.stride_c = pick(1, 3), c.dil_r = pick(1, 3), c.dil_c = pick(1, 3);
    c.top = c.bottom = c.left = c.right = 0;
    const std::int64_t eff_r = (c.kh - 1) * c.dil_r + 1, eff_c = (c.kw - 1) * c.dil_c + 1;
    if (c.padding == "EXPLICIT") c.top = pick(0, 3), c.bottom = pick(0, 3), c.left = pick(0, 3), c.right = pick(0, 3);
    if (c.padding == "SAME") {
      const auto need = [](std::int64_t in, std::int64_t s, std::int64_t eff) {
        return std::max<std::int64_t>(0, ((in + s - 1) / s - 1) * s + eff - in);
      };
      const std::int64_t nr = need(c.rows, c.stride_r, eff_r), nc = need(c.cols, c.stride_c, eff_c);
      c.top = nr / 2, c.bottom = nr - nr / 2, c.left = nc / 2, c.right = nc - nc / 2;
    }
    if (c.rows + c.top + c.bottom >= eff_r && c.cols + c.left + c.right >= eff_c) return c;
  }
}

Tensor ref(std::string_view op, std::vector<Tensor> inputs, const ops::Conv2DOptions& o) {
  return run_op(op, std::move(inputs), ops::conv2d_attr_map(o), {.backend = "reference"}).at(0);
}

Tensor abs_of(const Tensor& t) {
  Tensor out = t.clone();
  for (std::int64_t i = 0; i < out.num_elements(); ++i) out.data<double>()[i] = std::abs(out.data<double>()[i]);
  return out;
}

}  // namespace

TEST_CASE("Conv2D sweep: reference matches the oracle and the adjoint identities hold", "[conv]") {
  std::mt19937_64 rng(20240601);
  for (int iter = 0; iter < 300; ++iter) {
    const Case c = random_case(rng);
    INFO(c.describe());
    const Tensor x_nhwc = random_tensor(DType::Float64, Shape{c.batch, c.rows, c.cols, c.groups * c.filter_in}, rng);
    const Tensor w = random_tensor(DType::Float64, Shape{c.kh, c.kw, c.filter_in, c.out_depth}, rng);
    const bool nchw = c.format == "NCHW";
    const Tensor x = nchw ? nhwc_to_nchw(x_nhwc) : x_nhwc;
    const auto o = c.options();

    const Tensor y = ref("Conv2D", {x, w}, o);
    const Tensor expected =
        oracle_conv2d_nhwc(x_nhwc, w, c.stride_r, c.stride_c, c.dil_r, c.dil_c, c.top, c.bottom, c.left, c.right);
    const Tensor y_nhwc = nchw ? nchw_to_nhwc(y) : y;
    REQUIRE(y_nhwc.shape() == expected.shape());
    for (std::int64_t i = 0; i < y.num_elements(); ++i) {
      REQUIRE(y_nhwc.value_as_double(i) == Approx(expected.value_as_double(i)).margin(1e-13));
    }

    const Tensor dy = random_tensor(DType::Float64, y.shape(), rng);
    const Tensor dw = ref("Conv2DBackpropFilterV2", {x, w, dy}, o);
    const Tensor dx = ref("Conv2DBackpropInputV2", {x, w, dy}, o);
    REQUIRE(dw.shape() == w.shape());
    REQUIRE(dx.shape() == x.shape());
    // The three inner products are the same multilinear sum in a different order; the bound is
    // a few ulps of the sum of absolute terms.
    const double lhs = dot(y, dy);
    const double scale = 1e-13 * (1.0 + sum_abs_products(y, dy) + sum_abs_products(w, dw) + sum_abs_products(x, dx));
    CHECK(std::abs(dot(w, dw) - lhs) <= scale);
    CHECK(std::abs(dot(x, dx) - lhs) <= scale);
    if (c.batch == 0) CHECK(values(dw) == std::vector<double>(static_cast<std::size_t>(dw.num_elements()), 0.0));

    // The other layout gives the same filter gradient and the transposed input gradient.
    Case other = c;
    other.format = nchw ? "NHWC" : "NCHW";
    const Tensor x_other = nchw ? x_nhwc : nhwc_to_nchw(x_nhwc);
    const Tensor dy_other = nchw ? nchw_to_nhwc(dy) : nhwc_to_nchw(dy);
    const Tensor dw_other = ref("Conv2DBackpropFilterV2", {x_other, w, dy_other}, other.options());
    for (std::int64_t i = 0; i < dw.num_elements(); ++i) {
      REQUIRE(dw_other.value_as_double(i) == Approx(dw.value_as_double(i)).margin(1e-13));
    }
    const Tensor dx_other = ref("Conv2DBackpropInputV2", {x_other, w, dy_other}, other.options());
    const Tensor dx_back = nchw ? nhwc_to_nchw(dx_other) : nchw_to_nhwc(dx_other);
    for (std::int64_t i = 0; i < dx.num_elements(); ++i) {
      REQUIRE(dx_back.value_as_double(i) == Approx(dx.value_as_double(i)).margin(1e-13));
    }
  }
}

// Documented tolerance. With u the unit roundoff of T (2^-11 half, 2^-8 bfloat16, 2^-24 float),
// inputs rounded to T and one rounding of the float64 sum, every element satisfies
//   |r_T - r_64| <= u |r_64| + 2.1 u S  (+ 2^-24 (1 + terms) absolute for half's subnormals)
// where S is the same op on |inputs| (the sum of |products|) and terms the number of products. The reference kernels
// are also exactly the one-rounding of the float64 kernel run on the rounded inputs.
TEST_CASE("half, bfloat16 and float reference results are within the documented tolerance", "[conv]") {
  std::mt19937_64 rng(99);
  const struct {
    DType dtype;
    double u;
  } types[] = {{DType::Half, std::ldexp(1.0, -11)},
               {DType::BFloat16, std::ldexp(1.0, -8)},
               {DType::Float32, std::ldexp(1.0, -24)}};
  for (int iter = 0; iter < 40; ++iter) {
    const Case c = random_case(rng);
    INFO(c.describe());
    const bool nchw = c.format == "NCHW";
    const Tensor x_nhwc = random_tensor(DType::Float64, Shape{c.batch, c.rows, c.cols, c.groups * c.filter_in}, rng);
    const Tensor x = nchw ? nhwc_to_nchw(x_nhwc) : x_nhwc;
    const Tensor w = random_tensor(DType::Float64, Shape{c.kh, c.kw, c.filter_in, c.out_depth}, rng);
    const auto o = c.options();
    const Tensor dy = random_tensor(DType::Float64, ref("Conv2D", {x, w}, o).shape(), rng);
    const struct {
      const char* op;
      std::vector<Tensor> in;
    } ops_and_inputs[] = {
        {"Conv2D", {x, w}}, {"Conv2DBackpropInputV2", {x, w, dy}}, {"Conv2DBackpropFilterV2", {x, w, dy}}};
    for (const auto& [op, inputs] : ops_and_inputs) {
      const Tensor exact = ref(op, inputs, o);
      std::vector<Tensor> abs_inputs;
      for (const auto& t : inputs) abs_inputs.push_back(abs_of(t));
      const Tensor bound = ref(op, abs_inputs, o);
      std::vector<Tensor> ones;
      for (const auto& t : inputs) ones.push_back(Tensor::full(DType::Float64, t.shape(), 1.0));
      const Tensor terms = ref(op, ones, o);  // how many products each element sums
      for (const auto& [dtype, u] : types) {
        INFO(op << " " << dtype_name(dtype));
        std::vector<Tensor> low, low_as_f64;
        for (const auto& t : inputs) {
          low.push_back(t.cast(dtype));
          low_as_f64.push_back(low.back().cast(DType::Float64));
        }
        const Tensor r = ref(op, low, o);
        const Tensor r_exact_inputs = ref(op, low_as_f64, o).cast(dtype);
        for (std::int64_t i = 0; i < r.num_elements(); ++i) {
          REQUIRE(r.value_as_double(i) == r_exact_inputs.value_as_double(i));  // one rounding
          const double tol = u * std::abs(exact.value_as_double(i)) + 2.1 * u * bound.value_as_double(i) +
                             (dtype == DType::Half ? std::ldexp(1.0, -24) * (1.0 + terms.value_as_double(i)) : 0.0);
          REQUIRE(std::abs(r.value_as_double(i) - exact.value_as_double(i)) <= tol);
        }
      }
    }
  }
}
