// The CPU conv kernels against the reference kernel on inputs holding Inf, -Inf and NaN at edge and
// random positions: every fast path (NHWC, NCHW, grouped, small-channel segments, wide tiles,
// native bfloat16) must give the reference's NaN/Inf pattern, since padding contributes nothing
// there (no 0 * Inf), and agree with it on the finite elements.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "dagrad/backends/cpu/all_finite.hpp"
#include "dagrad/ops/conv_geometry.hpp"
#include "ops/conv_test_util.hpp"

namespace {

using namespace dagrad;
using namespace conv_test;
using i64 = std::int64_t;

struct Case {
  const char* format;
  i64 n, h, w, c, k, groups, kh, kw, stride, dilation;
  const char* padding;
  std::vector<i64> pads;  // EXPLICIT: top, bottom, left, right
};

// Chosen so that each fast path meets padding zeros or vector tails: SAME / EXPLICIT padding,
// widths that are no multiple of 16 or 8, strides and dilations of 2, C = 2-3 (whole filter rows
// as one segment), C, K >= 16 (native bfloat16, more than one 64-column tile; a 40x40 image where
// it multiplies dy by zeros for the padding), grouped NHWC with
// groups wide enough for the fast path, and NCHW depthwise.
const Case kCases[] = {
    {"NHWC", 2, 7, 9, 3, 5, 1, 3, 3, 1, 1, "SAME", {}},
    {"NHWC", 1, 8, 7, 3, 5, 1, 3, 3, 2, 1, "SAME", {}},
    {"NHWC", 1, 6, 8, 2, 3, 1, 3, 2, 1, 2, "EXPLICIT", {2, 0, 1, 3}},
    {"NHWC", 1, 9, 9, 3, 4, 1, 3, 3, 2, 1, "VALID", {}},
    {"NHWC", 1, 7, 6, 8, 16, 2, 3, 3, 1, 1, "SAME", {}},
    {"NHWC", 1, 8, 9, 8, 18, 2, 3, 2, 2, 2, "EXPLICIT", {0, 2, 3, 1}},
    {"NHWC", 1, 6, 7, 20, 70, 1, 3, 3, 1, 1, "SAME", {}},
    {"NHWC", 1, 9, 8, 17, 33, 1, 3, 3, 2, 2, "VALID", {}},
    {"NHWC", 2, 5, 6, 16, 20, 1, 1, 3, 1, 1, "EXPLICIT", {1, 0, 0, 2}},
    // Little of the work in the padding: native bfloat16 keeps padded taps as zero x words.
    {"NHWC", 1, 40, 40, 16, 16, 1, 3, 3, 1, 1, "SAME", {}},
    {"NCHW", 2, 6, 19, 3, 5, 1, 3, 3, 1, 1, "SAME", {}},
    {"NCHW", 1, 9, 21, 3, 4, 1, 3, 3, 2, 2, "VALID", {}},
    {"NCHW", 1, 6, 18, 4, 6, 1, 2, 3, 1, 2, "EXPLICIT", {1, 2, 0, 3}},
    {"NCHW", 1, 7, 17, 8, 16, 2, 3, 3, 1, 1, "SAME", {}},
    {"NCHW", 1, 6, 20, 6, 6, 6, 3, 3, 2, 1, "SAME", {}},
    {"NCHW", 1, 6, 23, 20, 70, 1, 3, 3, 2, 1, "SAME", {}},
    // No zeros to meet: VALID without column tails, and the input gradient of a "full" conv
    // (padding window - 1 on each side: every input pixel reaches an output through every tap).
    {"NCHW", 1, 5, 18, 3, 4, 1, 3, 3, 1, 1, "VALID", {}},
    {"NCHW", 1, 5, 6, 3, 4, 1, 3, 3, 1, 1, "EXPLICIT", {2, 2, 2, 2}},
    {"NHWC", 1, 5, 6, 3, 4, 1, 3, 3, 1, 1, "EXPLICIT", {2, 2, 2, 2}},
    {"NHWC", 1, 4, 5, 16, 16, 1, 3, 3, 1, 1, "EXPLICIT", {2, 2, 2, 2}},
};

const char* const kOps[] = {"Conv2D", "Conv2DBackpropInputV2", "Conv2DBackpropFilterV2"};
enum Operand { X, F, DY };

AttrMap attrs_of(const Case& cs) {
  std::vector<i64> explicit_paddings;
  if (!cs.pads.empty()) {
    explicit_paddings = std::string(cs.format) == "NHWC"
                            ? std::vector<i64>{0, 0, cs.pads[0], cs.pads[1], cs.pads[2], cs.pads[3], 0, 0}
                            : std::vector<i64>{0, 0, 0, 0, cs.pads[0], cs.pads[1], cs.pads[2], cs.pads[3]};
  }
  return {{"strides", spatial(cs.format, cs.stride, cs.stride)},
          {"dilations", spatial(cs.format, cs.dilation, cs.dilation)},
          {"padding", std::string(cs.padding)},
          {"explicit_paddings", explicit_paddings},
          {"data_format", std::string(cs.format)}};
}

// Activation shape in the case's layout.
Shape activation(const Case& cs, i64 rows, i64 cols, i64 depth) {
  return std::string(cs.format) == "NHWC" ? Shape{cs.n, rows, cols, depth} : Shape{cs.n, depth, rows, cols};
}

// Sets `value` at one element of a float64 tensor on the first or last row or column (axes
// row_axis, col_axis: spatial rows and columns, or filter taps) and at one random element.
void plant(Tensor& t, std::mt19937_64& rng, double value, i64 row_axis, i64 col_axis) {
  const Shape& s = t.shape();
  auto pick = [&](i64 hi) { return std::uniform_int_distribution<i64>(0, hi - 1)(rng); };
  std::vector<i64> at(static_cast<std::size_t>(s.rank()));
  for (i64 a = 0; a < s.rank(); ++a) at[static_cast<std::size_t>(a)] = pick(s[a]);
  // First or last row, or first or last column.
  const i64 edge = pick(4), axis = edge < 2 ? row_axis : col_axis;
  at[static_cast<std::size_t>(axis)] = edge % 2 == 0 ? 0 : s[axis] - 1;
  i64 flat = 0;
  for (i64 a = 0; a < s.rank(); ++a) flat = flat * s[a] + at[static_cast<std::size_t>(a)];
  t.data<double>()[flat] = value;
  t.data<double>()[pick(t.num_elements())] = value;
}

// Same NaN positions, the same infinities, and finite elements within `tolerance` of the largest
// finite reference magnitude.
void check_same(const Tensor& got, const Tensor& want, double tolerance) {
  REQUIRE(got.shape() == want.shape());
  double scale = 0;
  for (i64 i = 0; i < want.num_elements(); ++i)
    if (std::isfinite(want.value_as_double(i))) scale = std::max(scale, std::abs(want.value_as_double(i)));
  i64 mismatches = 0, first = -1;
  for (i64 i = 0; i < want.num_elements(); ++i) {
    const double g = got.value_as_double(i), w = want.value_as_double(i);
    const bool same = std::isnan(w)   ? std::isnan(g)
                      : std::isinf(w) ? g == w
                                      : std::isfinite(g) && std::abs(g - w) <= tolerance * std::max(scale, 1e-30);
    if (!same && mismatches++ == 0) first = i;
  }
  INFO(mismatches << " of " << want.num_elements() << " elements differ; first at " << first << ": got "
                  << (first >= 0 ? got.value_as_double(first) : 0.0) << ", want "
                  << (first >= 0 ? want.value_as_double(first) : 0.0));
  CHECK(mismatches == 0);
}

double tolerance(DType dtype) { return dtype == DType::Float32 ? 1e-5 : dtype == DType::Half ? 1e-3 : 8e-3; }

}  // namespace

TEST_CASE("cpu conv fast paths give the reference's Inf/NaN pattern where inputs hold them", "[cpu][conv]") {
  std::mt19937_64 rng(20261203);
  const double kValues[] = {std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(),
                            std::numeric_limits<double>::quiet_NaN()};
  for (const Case& cs : kCases) {
    const AttrMap attrs = attrs_of(cs);
    const bool nhwc = std::string(cs.format) == "NHWC";
    const Shape x_shape = activation(cs, cs.h, cs.w, cs.c), f_shape{cs.kh, cs.kw, cs.c / cs.groups, cs.k};
    const auto g = ops::conv2d_geometry("Conv2D", ops::parse_conv2d_attrs("Conv2D", attrs), x_shape, f_shape);
    const Shape dy_shape = activation(cs, g.out_rows, g.out_cols, cs.k);
    const i64 act_row = nhwc ? 1 : 2, act_col = nhwc ? 2 : 3;
    for (const char* op : kOps) {
      const std::string name = op;
      // The inputs the op reads: Conv2D (x, f), the input gradient (f, dy), the filter gradient (x, dy).
      const std::vector<Operand> read = name == "Conv2D"                  ? std::vector<Operand>{X, F}
                                        : name == "Conv2DBackpropInputV2" ? std::vector<Operand>{F, DY}
                                                                          : std::vector<Operand>{X, DY};
      for (Operand planted : read)
        for (double value : kValues)
          for (DType dtype : {DType::Float32, DType::Half, DType::BFloat16}) {
            Tensor x = random_tensor(DType::Float64, x_shape, rng), f = random_tensor(DType::Float64, f_shape, rng);
            Tensor dy = random_tensor(DType::Float64, dy_shape, rng);
            if (planted == X) plant(x, rng, value, act_row, act_col);
            if (planted == F) plant(f, rng, value, 0, 1);
            if (planted == DY) plant(dy, rng, value, act_row, act_col);
            std::vector<Tensor> inputs = {x.cast(dtype), f.cast(dtype)};
            if (name != "Conv2D") inputs.push_back(dy.cast(dtype));
            INFO(op << " " << cs.format << " x " << x_shape.to_string() << " filter " << f_shape.to_string()
                    << " groups " << cs.groups << " stride " << cs.stride << " dilation " << cs.dilation << " "
                    << cs.padding << " planted "
                    << "xfd"[planted] << " = " << value << " dtype " << dtype_name(dtype));
            const Tensor got = run_op(op, inputs, attrs, {.name = {}, .backend = "cpu"})[0];
            const Tensor want = run_op(op, inputs, attrs, {.name = {}, .backend = "reference"})[0];
            check_same(got, want, tolerance(dtype));
          }
    }
  }
}

TEST_CASE("cpu all_finite finds one Inf or NaN anywhere, in every block", "[cpu][conv]") {
  const i64 count = (i64{1} << 14) * 3 + 5;  // three full scan blocks and a tail
  auto check = [&]<class T>(T) {
    std::vector<T> v(static_cast<std::size_t>(count), T(1.5f));
    v[7] = -std::numeric_limits<T>::max();  // the largest finite magnitude
    CHECK(cpu::all_finite(v.data(), count));
    for (float special : {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::quiet_NaN()})
      for (i64 at : {i64{0}, i64{1} << 14, count - 1}) {
        std::vector<T> w = v;
        w[static_cast<std::size_t>(at)] = T(special);
        CHECK_FALSE(cpu::all_finite(w.data(), count));
        CHECK(cpu::all_finite(w.data(), at));  // the values before it
      }
  };
  check(1.0f);
  check(half(1.0f));
  check(bfloat16(1.0f));
}
