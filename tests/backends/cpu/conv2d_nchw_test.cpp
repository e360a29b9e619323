// The float32 NCHW conv kernels (conv2d/kernels.hpp: nchw_fast; nchw_slabs, on the NHWC paths), called directly so
// the path is certain, against the float64 reference kernel through run_op on a random sweep of strides, dilations,
// paddings, groups (1, 2, C) and odd sizes with column tails; half/bfloat16 through the registered cpu kernels; bitwise
// determinism for 1, 2 and 3 threads.
#include <catch2/catch.hpp>

#include <array>
#include <cstring>
#include <limits>

#include <tbb/task_arena.h>

#include "dagrad/backends/cpu/conv2d/kernels.hpp"
#include "dagrad/backends/cpu/conv2d/paths.hpp"
#include "dagrad/ops/conv_geometry.hpp"
#include "ops/conv_test_util.hpp"

namespace {

using namespace dagrad;
using namespace conv_test;
using i64 = std::int64_t;

const char* const kOps[] = {"Conv2D", "Conv2DBackpropInputV2", "Conv2DBackpropFilterV2"};

struct NchwCase {
  AttrMap attrs;
  ops::Conv2DGeometry g;
  Shape input, filter, output;
  std::string text;
};

// A random valid NCHW case; `big` gives more than one channel block, chunk and column vector.
NchwCase random_case(std::mt19937_64& rng, bool big) {
  auto pick = [&](i64 lo, i64 hi) { return std::uniform_int_distribution<i64>(lo, hi)(rng); };
  for (;;) {
    const i64 sh = pick(1, 3), sw = pick(1, 3), dh = pick(1, 2), dw = pick(1, 2), kh = pick(1, 3), kw = pick(1, 3);
    const std::string padding = std::array<const char*, 3>{"SAME", "VALID", "EXPLICIT"}[pick(0, 2)];
    const i64 n = pick(1, 2), h = big ? pick(5, 12) : pick(1, 11), w = big ? pick(17, 40) : pick(1, 37);
    i64 cg = big ? pick(30, 70) : pick(1, 7), kg = big ? pick(30, 70) : pick(1, 9), groups = 1;
    switch (pick(0, 3)) {
      case 0:
        groups = 2;
        break;
      case 1:
        groups = cg * (big ? 1 : pick(1, 3)), cg = 1, kg = pick(1, 2);
        break;  // depthwise-like
      default:
        break;
    }
    std::vector<i64> pads;
    if (padding == "EXPLICIT") pads = {0, 0, 0, 0, pick(0, 2), pick(0, 2), pick(0, 2), pick(0, 2)};
    NchwCase c{{{"strides", spatial("NCHW", sh, sw)},
                {"dilations", spatial("NCHW", dh, dw)},
                {"padding", padding},
                {"explicit_paddings", pads},
                {"data_format", std::string("NCHW")}},
               {},
               Shape{n, groups * cg, h, w},
               Shape{kh, kw, cg, groups * kg},
               Shape{},
               ""};
    try {
      c.g = ops::conv2d_geometry("Conv2D", ops::parse_conv2d_attrs("Conv2D", c.attrs), c.input, c.filter);
    } catch (const Error&) {
      continue;  // e.g. VALID with a window larger than the input
    }
    c.output = Shape{n, groups * kg, c.g.out_rows, c.g.out_cols};
    c.text = str_cat("input ", c.input.to_string(), " filter ", c.filter.to_string(), " groups ", groups, " strides ",
                     sh, ",", sw, " dilations ", dh, ",", dw, " ", padding, " pads ", c.g.pad_top, ",", c.g.pad_bottom,
                     ",", c.g.pad_left, ",", c.g.pad_right);
    if (!cpu::conv2d_nchw_fast_path_applies(c.g)) continue;  // an empty output
    return c;
  }
}

// The op's inputs: Conv2D (x, f); the V2 backprops (x, f, dy).
std::vector<Tensor> op_inputs(const char* op, const Tensor& x, const Tensor& f, const Tensor& dy) {
  return std::string(op) == "Conv2D" ? std::vector<Tensor>{x, f} : std::vector<Tensor>{x, f, dy};
}

// The NCHW kernels a float32 call may take, called directly so the path is certain: nchw_fast
// (Conv2D and the input gradient) and nchw_slabs (all three; the NHWC dispatch inside).
enum class Kernel { Fast, Slabs, Pointwise };
const char* kernel_name(Kernel k) {
  return k == Kernel::Fast ? "nchw_fast" : k == Kernel::Slabs ? "nchw_slabs" : "nchw_pointwise";
}

Tensor run_kernel(const char* op, Kernel kernel, const ops::Conv2DGeometry& g, const Tensor& x, const Tensor& f,
                  const Tensor& dy) {
  const std::string name = op;
  using FloatKernel = void (*)(const ops::Conv2DGeometry&, const float*, const float*, float*);
  const auto pick = [&](FloatKernel fast, FloatKernel slabs, FloatKernel pointwise) {
    return kernel == Kernel::Fast ? fast : kernel == Kernel::Slabs ? slabs : pointwise;
  };
  if (name == "Conv2D") {
    Tensor y = Tensor::full(DType::Float32, dy.shape(), -7.0);  // garbage that must be overwritten
    pick(cpu::conv2d_forward_fast_nchw, cpu::conv2d_forward_nchw_slabs<float>, cpu::conv2d_forward_nchw_pointwise)(
        g, x.data<float>(), f.data<float>(), y.data<float>());
    return y;
  }
  if (name == "Conv2DBackpropInputV2") {
    Tensor dx = Tensor::full(DType::Float32, x.shape(), -7.0);
    pick(cpu::conv2d_backprop_input_fast_nchw, cpu::conv2d_backprop_input_nchw_slabs<float>,
         cpu::conv2d_backprop_input_nchw_pointwise)(g, f.data<float>(), dy.data<float>(), dx.data<float>());
    return dx;
  }
  REQUIRE(kernel == Kernel::Slabs);  // the filter gradient has slabs only
  Tensor df = Tensor::full(DType::Float32, f.shape(), -7.0);
  cpu::conv2d_backprop_filter_nchw_slabs(g, x.data<float>(), dy.data<float>(), df.data<float>());
  return df;
}

// The kernels of `op` in the table above.
std::vector<Kernel> kernels_of(const char* op) {
  return std::string(op) == "Conv2DBackpropFilterV2" ? std::vector<Kernel>{Kernel::Slabs}
                                                     : std::vector<Kernel>{Kernel::Fast, Kernel::Slabs};
}

// Largest |got - want| relative to the largest |want|.
double relative_error(const Tensor& got, const Tensor& want) {
  REQUIRE(got.shape() == want.shape());
  double worst = 0, scale = 0;
  for (i64 i = 0; i < want.num_elements(); ++i) {
    worst = std::max(worst, std::abs(got.value_as_double(i) - want.value_as_double(i)));
    scale = std::max(scale, std::abs(want.value_as_double(i)));
  }
  return scale > 0 ? worst / scale : worst;
}

// Random operands in `dtype`; the float64 reference then sees exactly the same values.
struct Operands {
  Tensor x, f, dy;
};
Operands random_operands(std::mt19937_64& rng, const NchwCase& c, DType dtype) {
  return {random_tensor(dtype, c.input, rng), random_tensor(dtype, c.filter, rng), random_tensor(dtype, c.output, rng)};
}

Tensor reference(const char* op, const NchwCase& c, const Operands& o) {
  return run_op(op, op_inputs(op, o.x.cast(DType::Float64), o.f.cast(DType::Float64), o.dy.cast(DType::Float64)),
                c.attrs, {.name = {}, .backend = "reference"})[0];
}

void check_float32(std::mt19937_64& rng, const NchwCase& c) {
  const Operands o = random_operands(rng, c, DType::Float32);
  for (const char* op : kOps)
    for (const Kernel kernel : kernels_of(op)) {
      const double err = relative_error(run_kernel(op, kernel, c.g, o.x, o.f, o.dy), reference(op, c, o));
      INFO(op << " " << kernel_name(kernel) << " " << c.text << " relative error " << err);
      REQUIRE(err <= 1e-5);
    }
}

}  // namespace

TEST_CASE("cpu NCHW fast conv kernels match the float64 reference on random small cases", "[cpu][conv]") {
  std::mt19937_64 rng(2024);
  for (int trial = 0; trial < 60; ++trial) check_float32(rng, random_case(rng, false));
}

TEST_CASE("cpu NCHW fast conv kernels match the float64 reference with several channel blocks", "[cpu][conv]") {
  std::mt19937_64 rng(77);
  for (int trial = 0; trial < 4; ++trial) check_float32(rng, random_case(rng, true));
}

TEST_CASE("cpu NCHW slabs of one image each match the float64 reference", "[cpu][conv]") {
  // 128 x 90 x 90 inputs are a slab each (over 2^20 floats with the output): three slabs, the
  // filter gradient adding its partial filters, the outputs transposed back image by image.
  const AttrMap attrs = {{"strides", spatial("NCHW", 2, 2)},
                         {"dilations", spatial("NCHW", 1, 1)},
                         {"padding", std::string("SAME")},
                         {"explicit_paddings", std::vector<i64>{}},
                         {"data_format", std::string("NCHW")}};
  const Shape input{3, 128, 90, 90}, filter{3, 3, 128, 8};
  NchwCase c{attrs,   ops::conv2d_geometry("Conv2D", ops::parse_conv2d_attrs("Conv2D", attrs), input, filter),
             input,   filter,
             Shape{}, "input [3,128,90,90] filter [3,3,128,8] strides 2 SAME"};
  c.output = Shape{3, 8, c.g.out_rows, c.g.out_cols};
  std::mt19937_64 rng(90);
  const Operands o = random_operands(rng, c, DType::Float32);
  for (const char* op : kOps) {
    const double err = relative_error(run_kernel(op, Kernel::Slabs, c.g, o.x, o.f, o.dy), reference(op, c, o));
    INFO(op << " relative error " << err);
    REQUIRE(err <= 1e-5);
  }
}

TEST_CASE("cpu NCHW pointwise GEMM matches the float64 reference, the same bits for 1, 2 and 3 threads",
          "[cpu][conv]") {
  // Reductions of one, two and three blocks of 128 (C for Conv2D, K for the input gradient),
  // row tiles and groups with tails, pixel counts with vector and float tails, one pixel.
  const std::array<std::array<i64, 5>, 5> shapes{{
      {2, 150, 13, 9, 7},   // N, C, K, H, W
      {1, 7, 130, 5, 13},   //
      {3, 64, 50, 1, 1},    //
      {1, 300, 70, 8, 8},   //
      {2, 20, 290, 4, 17},  //
  }};
  std::mt19937_64 rng(11);
  for (const auto& [n, ch, k, h, w] : shapes) {
    const AttrMap attrs = {{"strides", spatial("NCHW", 1, 1)},
                           {"dilations", spatial("NCHW", 1, 1)},
                           {"padding", std::string("VALID")},
                           {"explicit_paddings", std::vector<i64>{}},
                           {"data_format", std::string("NCHW")}};
    const Shape input{n, ch, h, w}, filter{1, 1, ch, k};
    NchwCase c{attrs,
               ops::conv2d_geometry("Conv2D", ops::parse_conv2d_attrs("Conv2D", attrs), input, filter),
               input,
               filter,
               Shape{n, k, h, w},
               str_cat("input ", input.to_string(), " filter ", filter.to_string())};
    REQUIRE(cpu::conv2d_nchw_pointwise_applies(c.g));
    const Operands o = random_operands(rng, c, DType::Float32);
    for (const char* op : {"Conv2D", "Conv2DBackpropInputV2"}) {
      Tensor first;
      for (int threads : {1, 2, 3}) {
        Tensor got;
        tbb::task_arena(threads).execute([&] { got = run_kernel(op, Kernel::Pointwise, c.g, o.x, o.f, o.dy); });
        INFO(op << " " << c.text << " threads " << threads);
        if (threads == 1) {
          const double err = relative_error(got, reference(op, c, o));
          INFO("relative error " << err);
          REQUIRE(err <= 1e-5);
          first = got;
          continue;
        }
        REQUIRE(std::memcmp(got.raw_data(), first.raw_data(), static_cast<std::size_t>(got.num_elements()) * 4) == 0);
      }
    }
  }
}

TEST_CASE("cpu NCHW slabs give the NHWC paths' bits in half, bfloat16 and float32", "[cpu][conv]") {
  // nchw_slabs runs the NHWC dispatch on transposed tensors (one slab here: the cases are small), so
  // its result is the NHWC call's, transposed, bit for bit; the bfloat16 filter gradient included.
  const auto relayout = [](const Tensor& t, DType dtype, bool to_nhwc) {
    const Tensor wide = t.cast(DType::Float64);  // exact for every finite value of these dtypes
    return (to_nhwc ? nchw_to_nhwc(wide) : nhwc_to_nchw(wide)).cast(dtype);
  };
  std::mt19937_64 rng(404);
  int compared = 0;
  for (int trial = 0; trial < 10; ++trial) {
    const NchwCase c = random_case(rng, trial % 2 == 0);
    AttrMap nhwc_attrs = c.attrs;
    nhwc_attrs["data_format"] = std::string("NHWC");
    nhwc_attrs["strides"] = spatial("NHWC", c.g.stride_rows, c.g.stride_cols);
    nhwc_attrs["dilations"] = spatial("NHWC", c.g.dilation_rows, c.g.dilation_cols);
    if (std::get<std::string>(c.attrs.at("padding")) == "EXPLICIT")
      nhwc_attrs["explicit_paddings"] =
          std::vector<i64>{0, 0, c.g.pad_top, c.g.pad_bottom, c.g.pad_left, c.g.pad_right, 0, 0};
    for (DType dtype : {DType::Half, DType::BFloat16, DType::Float32}) {
      const Operands o = random_operands(rng, c, dtype);
      const Tensor x = relayout(o.x, dtype, true), dy = relayout(o.dy, dtype, true);
      for (const char* op : kOps) {
        if (cpu::conv2d_paths(op, c.g, dtype).front() != "nchw_slabs") continue;
        const Tensor got = run_op(op, op_inputs(op, o.x, o.f, o.dy), c.attrs)[0];
        Tensor want = run_op(op, op_inputs(op, x, o.f, dy), nhwc_attrs)[0];
        if (std::string(op) != "Conv2DBackpropFilterV2") want = relayout(want, dtype, false);
        INFO(op << " " << dtype_name(dtype) << " " << c.text);
        REQUIRE(std::memcmp(got.raw_data(), want.raw_data(), static_cast<std::size_t>(got.nbytes())) == 0);
        ++compared;
      }
    }
  }
  CHECK(compared >= 40);
}

TEST_CASE("cpu NCHW conv in half and bfloat16 stays near the float64 reference", "[cpu][conv]") {
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 12; ++trial) {
    const NchwCase c = random_case(rng, false);
    for (DType dtype : {DType::Half, DType::BFloat16}) {
      // Output rounding (2^-11, 2^-8) plus float32 accumulation, as in cpu_conv2d_ops_test.
      const double tolerance = dtype == DType::Half ? 2e-3 : 1.6e-2;
      const Operands o = random_operands(rng, c, dtype);
      for (const char* op : kOps) {
        const Tensor got = run_op(op, op_inputs(op, o.x, o.f, o.dy), c.attrs)[0];  // the registered cpu kernel
        REQUIRE(got.dtype() == dtype);
        const double err = relative_error(got, reference(op, c, o));
        INFO(op << " " << dtype_name(dtype) << " " << c.text << " relative error " << err);
        REQUIRE(err <= tolerance);
      }
    }
  }
}

TEST_CASE("cpu NCHW fast conv kernels give the same bits for 1, 2 and 3 threads", "[cpu][conv]") {
  std::mt19937_64 rng(31);
  for (int trial = 0; trial < 4; ++trial) {
    const NchwCase c = random_case(rng, true);
    const Operands o = random_operands(rng, c, DType::Float32);
    for (const char* op : kOps)
      for (const Kernel kernel : kernels_of(op)) {
        Tensor first;
        for (int threads : {1, 2, 3}) {
          Tensor got;
          tbb::task_arena(threads).execute([&] { got = run_kernel(op, kernel, c.g, o.x, o.f, o.dy); });
          if (threads == 1) {
            first = got;
            continue;
          }
          INFO(op << " " << kernel_name(kernel) << " " << c.text << " threads " << threads);
          REQUIRE(std::memcmp(got.raw_data(), first.raw_data(), static_cast<std::size_t>(got.num_elements()) * 4) == 0);
        }
      }
  }
}

TEST_CASE("cpu NCHW float32 conv with a huge stride takes a path that stays correct", "[cpu][conv]") {
  // A stride of 2^62: one output element; the fast path declines such strides (its panels grow
  // with them) and the result must still be the definition's.
  const i64 s = i64{1} << 62;
  const Tensor x = iota_tensor(Shape{1, 1, 3, 3}).cast(DType::Float32);
  const Tensor w = Tensor::full(DType::Float32, Shape{1, 1, 1, 1}, 2.0);
  const AttrMap attrs = {
      {"strides", spatial("NCHW", s, s)}, {"padding", std::string("VALID")}, {"data_format", std::string("NCHW")}};
  const Tensor y = run_op("Conv2D", {x, w}, attrs)[0];
  REQUIRE(y.shape() == Shape{1, 1, 1, 1});
  CHECK(y.value_as_double(0) == 2.0);
  const Tensor dy = Tensor::full(DType::Float32, Shape{1, 1, 1, 1}, 1.0);
  CHECK(values(run_op("Conv2DBackpropInputV2", {x, w, dy}, attrs)[0]) ==
        std::vector<double>{2, 0, 0, 0, 0, 0, 0, 0, 0});
  CHECK(values(run_op("Conv2DBackpropFilterV2", {x, w, dy}, attrs)[0]) == std::vector<double>{1});
}

TEST_CASE("cpu NCHW filter gradient keeps Inf out of entries it does not reach", "[cpu][conv]") {
  // A 1x3 filter over width 9 (VALID): 7 output columns. Tap kw reads input columns kw..kw+6,
  // so an Inf in column 8 reaches only tap 2; taps 0 and 1 stay finite (the vector tail lanes
  // of tap 0 would pair column 8 with zero-padded dy, were the call not sent to the generic path).
  const AttrMap attrs = {
      {"strides", spatial("NCHW", 1, 1)}, {"padding", std::string("VALID")}, {"data_format", std::string("NCHW")}};
  Tensor x = Tensor::full(DType::Float32, Shape{1, 1, 2, 9}, 1.0);
  x.data<float>()[8] = std::numeric_limits<float>::infinity();
  const Tensor f = Tensor::zeros(DType::Float32, Shape{1, 3, 1, 2});
  const Tensor dy = Tensor::full(DType::Float32, Shape{1, 2, 2, 7}, 0.5);
  const auto got = values(run_op("Conv2DBackpropFilterV2", {x, f, dy}, attrs)[0]);
  const auto want = values(run_op("Conv2DBackpropFilterV2", {x, f, dy}, attrs, {.backend = "reference"})[0]);
  CHECK(got == want);  // filter [kw][c][k]: taps 0 and 1 are 14 * 1 * 0.5, tap 2 is +Inf
  CHECK(got == std::vector<double>{7, 7, 7, 7, std::numeric_limits<double>::infinity(),
                                   std::numeric_limits<double>::infinity()});
}
