// The CPU conv path tables: every path that applies to a case of the conv sweeps, forced by name
// through EagerOptions::kernel_path, against the reference kernels in each dtype it claims; every
// row of every table exercised; errors for unknown and non-applying paths (eager and session);
// forcing runs the named kernel; the default choice of representative geometries.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <dagrad/dagrad.hpp>

#include "dagrad/backends/cpu/conv2d/kernels.hpp"
#include "dagrad/backends/cpu/conv2d/paths.hpp"
#include "support/conv_cases.hpp"
#include "support/error_of.hpp"

namespace {

using namespace dagrad;
using cpu::ConvOp;
using i64 = std::int64_t;
using Catch::Matchers::Contains;

struct OpName {
  ConvOp op;
  const char* name;
};
constexpr OpName kOps[] = {{ConvOp::Forward, "Conv2D"},
                           {ConvOp::BackpropInput, "Conv2DBackpropInputV2"},
                           {ConvOp::BackpropFilter, "Conv2DBackpropFilterV2"}};

Shape output_shape(const ops::Conv2DGeometry& g) {
  return g.data_format == ops::DataFormat::NHWC ? Shape{g.batch, g.out_rows, g.out_cols, g.out_depth}
                                                : Shape{g.batch, g.out_depth, g.out_rows, g.out_cols};
}

// Uniform in [-1, 1), rounded to dtype.
Tensor random_tensor(const Shape& shape, DType dtype, std::mt19937& rng) {
  Tensor t = Tensor::empty(DType::Float64, shape);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (i64 i = 0; i < t.num_elements(); ++i) t.data<double>()[i] = u(rng);
  return t.cast(dtype);
}

// As conv_oracle.hpp: relative to the largest magnitude, bounded by the output rounding.
double tolerance(DType dtype) {
  switch (dtype) {
    case DType::Float64:
      return 1e-12;
    case DType::Float32:
      return 1e-5;
    case DType::Half:
      return 1e-3;
    default:
      return 8e-3;
  }
}

std::string describe(const ops::Conv2DGeometry& g) {
  return str_cat(g.data_format == ops::DataFormat::NHWC ? "NHWC" : "NCHW", " N", g.batch, " H", g.in_rows, " W",
                 g.in_cols, " C", g.in_depth, " K", g.out_depth, " groups ", g.groups, " k", g.filter_rows, "x",
                 g.filter_cols, " s", g.stride_rows, ",", g.stride_cols, " d", g.dilation_rows, ",", g.dilation_cols,
                 " pads ", g.pad_top, ",", g.pad_bottom, ",", g.pad_left, ",", g.pad_right);
}

// A fixed case: NHWC or NCHW, SAME or VALID or EXPLICIT (pads 2, 1, 3, 0).
testing::ConvCase fixed_case(const char* format, const char* padding, i64 n, i64 h, i64 w, i64 c, i64 k, i64 kh, i64 kw,
                             i64 stride, i64 dilation, i64 groups) {
  const bool nhwc = std::string(format) == "NHWC";
  testing::ConvCase cs;
  cs.options.data_format = format;
  cs.options.padding = padding;
  cs.options.strides = nhwc ? std::vector<i64>{1, stride, stride, 1} : std::vector<i64>{1, 1, stride, stride};
  cs.options.dilations = nhwc ? std::vector<i64>{1, dilation, dilation, 1} : std::vector<i64>{1, 1, dilation, dilation};
  if (std::string(padding) == "EXPLICIT")
    cs.options.explicit_paddings =
        nhwc ? std::vector<i64>{0, 0, 2, 1, 3, 0, 0, 0} : std::vector<i64>{0, 0, 0, 0, 2, 1, 3, 0};
  cs.input = nhwc ? Shape{n, h, w, c} : Shape{n, c, h, w};
  cs.filter = Shape{kh, kw, c / groups, k};
  cs.geometry = ops::conv2d_geometry("Conv2D", ops::parse_conv2d_attrs("Conv2D", ops::conv2d_attr_map(cs.options)),
                                     cs.input, cs.filter);
  return cs;
}

// The sweeps' random cases (conv_cases.hpp), plus shapes they rarely reach: first layers (strips),
// wide reductions (native bfloat16), depthwise with a channel multiplier, grouped NHWC, NCHW slabs,
// and NCHW images wide enough for nchw_fast (its panels, sized for up to 64 rows of 64
// channels plus 512 columns of padding, fit its 16 MiB cap only from about 33 columns on).
std::vector<testing::ConvCase> sweep_cases() {
  std::vector<testing::ConvCase> cases;
  std::mt19937 rng(20261206);
  for (int i = 0; i < 90; ++i) cases.push_back(testing::random_conv_case(rng));
  for (int i = 0; i < 30; ++i) cases.push_back(testing::random_conv_case(rng, {.max_in_channels = 3, .max_groups = 1}));
  cases.push_back(fixed_case("NHWC", "SAME", 2, 20, 20, 1, 32, 3, 3, 1, 1, 1));
  cases.push_back(fixed_case("NHWC", "SAME", 1, 23, 21, 3, 70, 7, 7, 2, 1, 1));
  cases.push_back(fixed_case("NHWC", "EXPLICIT", 2, 9, 11, 20, 130, 5, 3, 1, 1, 1));
  cases.push_back(fixed_case("NHWC", "SAME", 1, 12, 13, 24, 40, 3, 5, 2, 2, 1));
  cases.push_back(fixed_case("NHWC", "VALID", 2, 9, 9, 32, 48, 3, 3, 1, 1, 1));
  cases.push_back(fixed_case("NHWC", "SAME", 2, 10, 9, 18, 210, 3, 3, 1, 1, 3));
  cases.push_back(fixed_case("NHWC", "SAME", 2, 9, 10, 8, 16, 3, 3, 2, 1, 8));
  cases.push_back(fixed_case("NHWC", "EXPLICIT", 1, 8, 7, 5, 15, 3, 2, 1, 2, 5));
  cases.push_back(fixed_case("NCHW", "SAME", 2, 9, 8, 16, 24, 3, 3, 1, 1, 1));
  cases.push_back(fixed_case("NCHW", "EXPLICIT", 3, 9, 10, 2, 37, 5, 3, 2, 2, 1));
  cases.push_back(fixed_case("NCHW", "VALID", 2, 8, 8, 6, 6, 3, 3, 1, 1, 6));
  cases.push_back(fixed_case("NCHW", "SAME", 2, 6, 40, 16, 24, 3, 3, 1, 1, 1));
  cases.push_back(fixed_case("NCHW", "EXPLICIT", 1, 7, 64, 6, 12, 3, 3, 2, 1, 2));
  cases.push_back(fixed_case("NCHW", "VALID", 2, 5, 48, 6, 6, 3, 3, 1, 2, 6));
  // First layers' col2im at stride 2: taps in pairs, odd and even filter widths, pads at both ends.
  cases.push_back(fixed_case("NCHW", "SAME", 2, 11, 13, 3, 20, 5, 5, 2, 1, 1));
  cases.push_back(fixed_case("NCHW", "EXPLICIT", 1, 9, 10, 1, 8, 3, 4, 2, 1, 1));
  // Pointwise: reduction blocks of 128 and a tail (C = 150 / K = 130), pixel tails (63, 65).
  cases.push_back(fixed_case("NCHW", "VALID", 2, 9, 7, 150, 13, 1, 1, 1, 1, 1));
  cases.push_back(fixed_case("NCHW", "SAME", 1, 5, 13, 7, 130, 1, 1, 1, 1, 1));
  return cases;
}

}  // namespace

TEST_CASE("every cpu conv path that applies matches the reference kernels, and every row is exercised",
          "[cpu][conv][paths]") {
  std::map<std::tuple<ConvOp, std::string, DType>, int> runs;
  std::mt19937 rng(7);
  for (const testing::ConvCase& cs : sweep_cases()) {
    const ops::Conv2DGeometry& g = cs.geometry;
    const AttrMap attrs = ops::conv2d_attr_map(cs.options);
    for (const OpName& op : kOps) {
      for (const DType dtype : kFloatingDTypes) {
        const auto paths = cpu::conv2d_paths(op.name, g, dtype);
        INFO(op.name << " " << dtype_name(dtype) << " " << describe(g));
        REQUIRE(!paths.empty());
        REQUIRE(paths.back() == "generic");
        const Tensor x = random_tensor(cs.input, dtype, rng), f = random_tensor(cs.filter, dtype, rng),
                     dy = random_tensor(output_shape(g), dtype, rng);
        const std::vector<Tensor> in =
            op.op == ConvOp::Forward ? std::vector<Tensor>{x, f} : std::vector<Tensor>{x, f, dy};
        std::vector<Tensor> in64;
        for (const Tensor& t : in) in64.push_back(t.cast(DType::Float64));
        const Tensor want = run_op(op.name, in64, attrs, {.backend = "reference"}).at(0);
        double scale = 0;
        for (i64 i = 0; i < want.num_elements(); ++i) scale = std::max(scale, std::abs(want.data<double>()[i]));
        for (const std::string_view path : paths) {
          const Tensor got = run_op(op.name, in, attrs, {.kernel_path = path}).at(0).cast(DType::Float64);
          REQUIRE(got.shape() == want.shape());
          double worst = 0;
          for (i64 i = 0; i < got.num_elements(); ++i)
            worst = std::max(worst, std::abs(got.data<double>()[i] - want.data<double>()[i]));
          INFO("path " << path << " worst " << worst << " scale " << scale);
          REQUIRE(worst <= tolerance(dtype) * std::max(scale, 1e-30));
          ++runs[{op.op, std::string(path), dtype}];
        }
      }
    }
  }
  // Coverage: each row of each table, in each dtype it claims. A row that cannot apply on this
  // CPU is named in a warning, never skipped silently.
  for (const OpName& op : kOps) {
    for (const cpu::ConvPath& path : cpu::conv2d_path_table(op.op)) {
      for (const DType dtype : kFloatingDTypes) {
        if (!path.claims(dtype)) continue;
        if (path.name == "bf16_native" && !cpu::conv2d_bf16_native_available()) {
          WARN(op.name << ": path bf16_native not exercised: this CPU lacks AVX512_BF16");
          continue;
        }
        if (path.name == "amx" && !cpu::conv2d_amx_available()) {
          WARN(op.name << ": path amx not exercised: this CPU lacks AMX-BF16 (conv2d_bf16_test runs it on emulated "
                          "tiles)");
          continue;
        }
        if (runs[{op.op, std::string(path.name), dtype}] == 0)
          FAIL_CHECK(op.name << ": path " << path.name << " in " << dtype_name(dtype) << " was exercised by no case");
      }
    }
  }
}

TEST_CASE("forcing a cpu conv path runs that path's kernel", "[cpu][conv][paths]") {
  // A call whose fast path's blocked float32 sums differ in their last bits from the generic
  // path's, so that a forced path that was ignored would show. Whether a given shape's sums differ
  // depends on the compiler's contractions: try wider reductions until they do.
  for (const i64 channels : {64, 128, 256, 512}) {
    const testing::ConvCase cs = fixed_case("NHWC", "SAME", 2, 8, 8, channels, 64, 3, 3, 1, 1, 1);
    const ops::Conv2DGeometry& g = cs.geometry;
    const AttrMap attrs = ops::conv2d_attr_map(cs.options);
    std::mt19937 rng(11);
    const Tensor x = random_tensor(cs.input, DType::Float32, rng), f = random_tensor(cs.filter, DType::Float32, rng);
    const auto bits_equal = [](const Tensor& a, const std::vector<float>& b) {
      return a.num_elements() == static_cast<i64>(b.size()) &&
             std::memcmp(a.data<float>(), b.data(), b.size() * sizeof(float)) == 0;
    };
    std::vector<float> fast(static_cast<std::size_t>(output_shape(g).num_elements())), generic(fast.size()),
        winograd(fast.size());
    cpu::conv2d_forward_fast(g, x.data<float>(), f.data<float>(), fast.data());
    cpu::conv2d_forward_winograd(g, x.data<float>(), f.data<float>(), winograd.data());
    cpu::conv2d_forward_generic<float>(g, x.data<float>(), f.data<float>(), generic.data());
    if (std::memcmp(fast.data(), generic.data(), fast.size() * sizeof(float)) == 0) continue;
    INFO(channels << " channels");
    CHECK(bits_equal(run_op("Conv2D", {x, f}, attrs).at(0), winograd));  // the default
    CHECK(bits_equal(run_op("Conv2D", {x, f}, attrs, {.kernel_path = "nhwc_fast"}).at(0), fast));
    CHECK(bits_equal(run_op("Conv2D", {x, f}, attrs, {.kernel_path = "generic"}).at(0), generic));
    // Through a session too.
    Graph graph;
    const Output y = ops::conv2d(graph, ops::constant(graph, x), ops::constant(graph, f), cs.options);
    CHECK(bits_equal(Session(graph, {.kernel_path = "generic"}).run({}, y), generic));
    CHECK(bits_equal(Session(graph).run({}, y), winograd));
    CHECK(bits_equal(Session(graph, {.kernel_path = "nhwc_fast"}).run({}, y), fast));
    return;
  }
  // Where the compiler contracts the generic path's multiply-adds as the fast path's kernels do
  // (clang's default), both sum the same products in the same order: the bits cannot tell which
  // path ran. The GCC builds see them differ; the error tests below run everywhere.
  WARN("the fast and generic paths agree bit for bit on every shape tried: forcing not observable here");
}

TEST_CASE("an unknown or non-applying cpu conv path is an InvalidArgument naming op, path and choices",
          "[cpu][conv][paths]") {
  using testing::error_of;
  const testing::ConvCase nhwc = fixed_case("NHWC", "SAME", 1, 6, 6, 4, 8, 3, 3, 1, 1, 1);
  const testing::ConvCase nchw = fixed_case("NCHW", "SAME", 1, 6, 40, 4, 8, 3, 3, 1, 1, 1);
  std::mt19937 rng(5);
  const Tensor x = random_tensor(nhwc.input, DType::Float32, rng), f = random_tensor(nhwc.filter, DType::Float32, rng);
  const Tensor xc = random_tensor(nchw.input, DType::Float32, rng);
  const AttrMap attrs = ops::conv2d_attr_map(nhwc.options), attrs_c = ops::conv2d_attr_map(nchw.options);
  try {
    run_op("Conv2D", {x, f}, attrs, {.kernel_path = "bogus"});
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.code() == Code::InvalidArgument);
    CHECK(std::string(e.what()) ==
          "Conv2D: unknown kernel path 'bogus'; the paths of Conv2D are depthwise, amx, winograd, bf16_native, "
          "strips, nhwc_fast, nchw_pointwise, nchw_im2col, nchw_slabs, nchw_fast, generic");
  }
  CHECK_THAT(error_of([&] {
               run_op("Conv2D", {xc, f}, attrs_c, {.kernel_path = "nhwc_fast"});
             }),
             Contains("Conv2D: kernel path 'nhwc_fast' does not apply to this call (float NCHW, input [1,4,6,40], "
                      "filter [3,3,4,8], groups 1); the paths that apply: nchw_im2col, nchw_slabs, nchw_fast, "
                      "generic"));
  const Tensor x64 = x.cast(DType::Float64), f64 = f.cast(DType::Float64);
  CHECK_THAT(error_of([&] {
               run_op("Conv2D", {x64, f64}, attrs, {.kernel_path = "nhwc_fast"});
             }),
             Contains("the paths that apply: generic"));
  // The backprop ops name themselves, V1 included; strips is no path of the input gradient.
  const Tensor dy = random_tensor(Shape{1, 6, 6, 8}, DType::Float32, rng);
  const Tensor sizes = Tensor::from_values<std::int32_t>(Shape{4}, {1, 6, 6, 4});
  CHECK_THAT(
      error_of([&] {
        run_op("Conv2DBackpropInput", {sizes, f, dy}, attrs, {.kernel_path = "strips"});
      }),
      Contains("Conv2DBackpropInput: unknown kernel path 'strips'; the paths of Conv2DBackpropInput are "
               "depthwise, amx, winograd, bf16_native, col2im, nhwc_fast, nchw_pointwise, nchw_col2im, nchw_slabs, "
               "nchw_fast, "
               "generic"));
  CHECK_THAT(error_of([&] {
               run_op("Conv2DBackpropFilterV2", {x, f, dy}, attrs, {.kernel_path = "nchw_slabs"});
             }),
             Contains("Conv2DBackpropFilterV2: kernel path 'nchw_slabs' does not apply"));
  // A session forces every node with a path table; ops without one ignore the option.
  Graph graph;
  const Output y = ops::conv2d(graph, ops::constant(graph, x), ops::constant(graph, f), nhwc.options);
  CHECK_THAT(error_of([&] { Session(graph, {.kernel_path = "nchw_fast"}).run({}, y); }),
             Contains("kernel path 'nchw_fast' does not apply"));
  const Output r = ops::relu(graph, ops::constant(graph, x));
  CHECK(Session(graph, {.kernel_path = "bogus"}).run({}, r).shape() == x.shape());
  CHECK(cpu::conv2d_paths("Relu").empty());
  CHECK(cpu::conv2d_paths("Conv2DBackpropFilter") ==
        std::vector<std::string_view>{"depthwise", "amx", "nchw_pointwise", "strips", "winograd", "bf16_native",
                                      "nhwc_fast", "nchw_slabs", "generic"});
}

TEST_CASE("the default cpu conv dispatch picks the expected path for representative calls", "[cpu][conv][paths]") {
  struct Expect {
    testing::ConvCase cs;
    DType dtype;
    const char *forward, *input, *filter;
  };
  const bool bf16 = cpu::conv2d_bf16_native_available(), amx = cpu::conv2d_amx_available();
  // bfloat16 where Winograd's tiles apply: AMX first, else widened on them (faster than the native
  // pairs); where they do not, the native pairs where the CPU has them.
  const char* const bf16_winograd_row = amx ? "amx" : "winograd";
  const char* const bf16_row = amx ? "amx" : bf16 ? "bf16_native" : "nhwc_fast";
  const auto big_pads = [] {  // 1x1 filter, 200 zeros each side: the scanned taps are mostly padding
    testing::ConvCase cs = fixed_case("NHWC", "VALID", 1, 4, 4, 2, 2, 1, 1, 1, 1, 1);
    cs.options.padding = "EXPLICIT";
    cs.options.explicit_paddings = {0, 0, 200, 200, 200, 200, 0, 0};
    cs.geometry = ops::conv2d_geometry("Conv2D", ops::parse_conv2d_attrs("Conv2D", ops::conv2d_attr_map(cs.options)),
                                       cs.input, cs.filter);
    return cs;
  };
  const Expect expects[] = {
      {fixed_case("NHWC", "SAME", 2, 9, 9, 8, 16, 3, 3, 1, 1, 8), DType::Float32, "depthwise", "depthwise",
       "depthwise"},
      {fixed_case("NHWC", "SAME", 2, 9, 9, 8, 16, 3, 3, 1, 1, 8), DType::BFloat16, "depthwise", "depthwise",
       "depthwise"},
      {fixed_case("NHWC", "SAME", 2, 20, 20, 1, 32, 3, 3, 1, 1, 1), DType::Float32, "strips", "col2im", "strips"},
      {fixed_case("NHWC", "SAME", 2, 20, 20, 1, 32, 3, 3, 1, 1, 1), DType::Half, "strips", "col2im", "strips"},
      // Stride 1, 3 to 5 taps a side, 16 channels and filters or more: Winograd's tiles; else direct.
      {fixed_case("NHWC", "SAME", 2, 9, 9, 32, 48, 3, 3, 1, 1, 1), DType::Float32, "winograd", "winograd", "winograd"},
      {fixed_case("NHWC", "SAME", 2, 9, 9, 32, 48, 5, 5, 1, 1, 1), DType::Half, "winograd", "winograd", "winograd"},
      {fixed_case("NHWC", "SAME", 2, 9, 9, 32, 48, 3, 3, 2, 1, 1), DType::Float32, "nhwc_fast", "nhwc_fast",
       "nhwc_fast"},
      {fixed_case("NHWC", "SAME", 2, 9, 9, 32, 48, 7, 7, 1, 1, 1), DType::Float32, "nhwc_fast", "nhwc_fast",
       "nhwc_fast"},
      {fixed_case("NHWC", "SAME", 2, 9, 9, 32, 8, 3, 3, 1, 1, 1), DType::Float32, "nhwc_fast", "nhwc_fast",
       "nhwc_fast"},
      {fixed_case("NHWC", "SAME", 2, 9, 9, 32, 48, 3, 3, 1, 1, 1), DType::BFloat16, bf16_winograd_row,
       bf16_winograd_row, bf16_winograd_row},
      {fixed_case("NHWC", "SAME", 2, 9, 9, 32, 48, 3, 3, 2, 1, 1), DType::BFloat16, bf16_row, bf16_row, bf16_row},
      {fixed_case("NHWC", "SAME", 2, 9, 9, 32, 48, 3, 3, 1, 1, 4), DType::Float32, "nhwc_fast", "nhwc_fast",
       "nhwc_fast"},
      // NCHW runs through the NHWC rows where one of them takes the call (nchw_slabs), in its own
      // dtype; nchw_fast keeps the groups too thin for nhwc_fast, nchw_im2col and nchw_col2im the
      // first layers' Conv2D and input gradient.
      {fixed_case("NCHW", "SAME", 2, 6, 40, 32, 16, 3, 3, 1, 1, 1), DType::Float32, "nchw_slabs", "nchw_slabs",
       "nchw_slabs"},
      {fixed_case("NCHW", "SAME", 2, 6, 40, 32, 16, 3, 3, 1, 1, 1), DType::BFloat16, "nchw_slabs", "nchw_slabs",
       "nchw_slabs"},
      {fixed_case("NCHW", "SAME", 2, 6, 40, 1, 16, 3, 3, 1, 1, 1), DType::Float32, "nchw_im2col", "nchw_col2im",
       "strips"},
      {fixed_case("NCHW", "SAME", 2, 9, 9, 8, 8, 3, 3, 1, 1, 4), DType::Float32, "nchw_fast", "nchw_fast",
       "nchw_slabs"},
      {fixed_case("NCHW", "SAME", 2, 9, 9, 32, 16, 3, 3, 65, 1, 1), DType::Float32, "nchw_slabs", "nchw_slabs",
       "nchw_slabs"},
      // 1x1 without strides: one GEMM per image in place.
      {fixed_case("NCHW", "VALID", 2, 9, 9, 32, 16, 1, 1, 1, 1, 1), DType::Float32, "nchw_pointwise", "nchw_pointwise",
       "nchw_pointwise"},
      {fixed_case("NCHW", "VALID", 2, 9, 9, 32, 16, 1, 1, 1, 1, 1), DType::BFloat16, "nchw_slabs", "nchw_slabs",
       "strips"},
      {fixed_case("NCHW", "VALID", 2, 9, 9, 32, 16, 1, 1, 2, 1, 1), DType::Float32, "nchw_slabs", "nchw_slabs",
       "strips"},
      {fixed_case("NHWC", "SAME", 2, 9, 9, 32, 48, 3, 3, 1, 1, 1), DType::Float64, "generic", "generic", "generic"},
      // The input gradient scans input positions, only 16 here.
      {big_pads(), DType::Float32, "generic", "nhwc_fast", "generic"},
  };
  for (const Expect& e : expects) {
    INFO(dtype_name(e.dtype) << " " << describe(e.cs.geometry));
    CHECK(cpu::conv2d_paths("Conv2D", e.cs.geometry, e.dtype).front() == e.forward);
    CHECK(cpu::conv2d_paths("Conv2DBackpropInputV2", e.cs.geometry, e.dtype).front() == e.input);
    CHECK(cpu::conv2d_paths("Conv2DBackpropFilterV2", e.cs.geometry, e.dtype).front() == e.filter);
    CHECK(cpu::conv2d_choose_path(ConvOp::Forward, "Conv2D", e.cs.geometry, e.dtype, {}).name == e.forward);
  }
}
