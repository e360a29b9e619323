// Conv2D geometry with TF's semantics: attribute parsing, output sizes, padding amounts, and the
// shape checks shared by Conv2D and its two backprop ops. Arithmetic on user-supplied sizes runs
// in 128 bits, so huge strides, dilations, paddings or dims give an error or an exact result,
// never a wrapped int64.
#include "dagrad/ops/conv_geometry.hpp"

#include <algorithm>
#include <limits>
#include <utility>

#include "dagrad/core/checked.hpp"
#include "dagrad/core/error.hpp"
#include "dagrad/core/kernel_registry.hpp"

namespace dagrad::ops {
namespace {

using Wide = __int128;
constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();

std::string list_to_string(const std::vector<std::int64_t>& values) {
  std::string text = "[";
  for (std::size_t i = 0; i < values.size(); ++i) text += (i ? ", " : "") + std::to_string(values[i]);
  return text + "]";
}

// Positions of H, W, N and C in a 4-element list ordered by data_format.
struct Axes {
  int n, h, w, c;
};
Axes axes_of(DataFormat f) { return f == DataFormat::NHWC ? Axes{0, 1, 2, 3} : Axes{0, 2, 3, 1}; }

// Output size of one spatial dimension, or -1 when the input or filter size is unknown.
std::int64_t spatial_output(std::string_view op, const char* dim_name, std::int64_t in, std::int64_t filter,
                            std::int64_t dilation, std::int64_t stride, Padding padding, std::int64_t* before,
                            std::int64_t* after) {
  if (in < 0 || filter < 0) {
    if (padding == Padding::Same) *before = *after = Shape::kUnknown;
    return Shape::kUnknown;
  }
  try {
    return windowed_output_size(in, filter, dilation, stride, padding, before, after);
  } catch (const Error& e) {
    fail(e.code(), op, ": ", dim_name, ": ", e.what());
  }
}

}  // namespace

std::vector<std::int64_t> Conv2DGeometry::input_dims() const {
  if (data_format == DataFormat::NHWC) return {batch, in_rows, in_cols, in_depth};
  return {batch, in_depth, in_rows, in_cols};
}

std::vector<std::int64_t> Conv2DGeometry::output_dims() const {
  if (data_format == DataFormat::NHWC) return {batch, out_rows, out_cols, out_depth};
  return {batch, out_depth, out_rows, out_cols};
}

std::vector<std::int64_t> Conv2DGeometry::filter_dims() const {
  return {filter_rows, filter_cols, filter_in_depth, out_depth};
}

double Conv2DGeometry::flops() const {
  return 2.0 * static_cast<double>(batch) * static_cast<double>(out_rows) * static_cast<double>(out_cols) *
         static_cast<double>(filter_rows) * static_cast<double>(filter_cols) * static_cast<double>(filter_in_depth) *
         static_cast<double>(out_depth);
}

TapProgression conv_input_taps(std::int64_t o, std::int64_t stride, std::int64_t dilation, std::int64_t pad,
                               std::int64_t size, std::int64_t filter) {
  // Input position (o * stride + k * dilation) - pad lies in [0, size) for k in [lo, hi].
  const std::int64_t start = o * stride;                // <= the padded size: the geometry guarantee
  const std::int64_t below = pad - start;               // k * dilation must reach this
  const std::int64_t above = (size - 1 + pad) - start;  // and not pass this; size + pad <= INT64_MAX
  if (above < 0 || filter <= 0) return {};
  const std::int64_t lo = below <= 0 ? 0 : below / dilation + (below % dilation != 0);
  return {lo, std::min(filter - 1, above / dilation), 1};
}

namespace {
// The inverse of a modulo m (gcd(a, m) = 1, m >= 1), by the extended Euclidean algorithm.
std::int64_t inverse_mod(std::int64_t a, std::int64_t m) {
  Wide r0 = m, r1 = a % m, s0 = 0, s1 = 1;
  while (r1 != 0) {
    const Wide q = r0 / r1;
    const Wide r2 = r0 - q * r1, s2 = s0 - q * s1;
    r0 = r1, r1 = r2, s0 = s1, s1 = s2;
  }
  const Wide inv = s0 % m;
  return static_cast<std::int64_t>(inv < 0 ? inv + m : inv);
}
}  // namespace

ConvOutputTaps::ConvOutputTaps(std::int64_t stride, std::int64_t dilation, std::int64_t pad, std::int64_t out_size,
                               std::int64_t filter)
    : stride_(stride), dilation_(dilation), pad_(pad), out_size_(out_size), filter_(filter) {
  std::int64_t a = stride, b = dilation;
  while (b != 0) a = std::exchange(b, a % b);
  gcd_ = a;
  period_ = stride / gcd_;
  inverse_ = period_ == 1 ? 0 : inverse_mod((dilation / gcd_) % period_, period_);
}

TapProgression ConvOutputTaps::at(std::int64_t i) const {
  if (out_size_ <= 0 || filter_ <= 0) return {};
  // t = (i + pad) - k * dilation must be a multiple of stride in [0, (out_size - 1) * stride].
  const std::int64_t t = i + pad_;                            // <= the padded size
  const std::int64_t last_start = (out_size_ - 1) * stride_;  // <= the padded size minus the window
  const std::int64_t hi = std::min(filter_ - 1, t / dilation_);
  const std::int64_t over = t - last_start;  // k * dilation must be at least this
  const std::int64_t lo = over <= 0 ? 0 : over / dilation_ + (over % dilation_ != 0);
  const std::int64_t residue = t % stride_;
  if (lo > hi || residue % gcd_ != 0) return {};
  // k * (dilation / g) == residue / g (mod period): k == k0 (mod period).
  const auto k0 = static_cast<std::int64_t>(static_cast<Wide>(residue / gcd_) * inverse_ % period_);
  const std::int64_t skip = ((k0 - lo % period_) % period_ + period_) % period_;  // to the first k >= lo
  if (skip > hi - lo) return {};
  const std::int64_t first = lo + skip;
  return {first, first + (hi - first) / period_ * period_, period_};
}

std::int64_t conv_real_tap_pairs(std::int64_t out_size, std::int64_t stride, std::int64_t dilation, std::int64_t pad,
                                 std::int64_t size, std::int64_t filter) {
  std::int64_t pairs = 0;
  for (std::int64_t o = 0; o < out_size; ++o)
    pairs = checked_add(pairs, conv_input_taps(o, stride, dilation, pad, size, filter).count(), "conv tap pairs");
  return pairs;
}

Conv2DAttrs parse_conv2d_attrs(std::string_view op, const AttrMap& attrs) {
  Conv2DAttrs a;
  const auto& format = get_attr<std::string>(attrs, "data_format");
  if (format == "NHWC")
    a.data_format = DataFormat::NHWC;
  else if (format == "NCHW")
    a.data_format = DataFormat::NCHW;
  else
    invalid_argument(op, ": Invalid data format: '", format, "'; expected NHWC or NCHW");
  const Axes ax = axes_of(a.data_format);

  const auto& strides = get_attr<std::vector<std::int64_t>>(attrs, "strides");
  DAGRAD_REQUIRE(strides.size() == 4, op,
                 ": Sliding window strides field must specify 4 dimensions, got strides = ", list_to_string(strides));
  DAGRAD_REQUIRE(strides[ax.n] == 1 && strides[ax.c] == 1, op,
                 ": Current implementation does not yet support strides in the batch and depth dimensions. strides = ",
                 list_to_string(strides), ", data_format = ", format);
  a.stride_rows = strides[ax.h];
  a.stride_cols = strides[ax.w];
  DAGRAD_REQUIRE(a.stride_rows > 0 && a.stride_cols > 0, op,
                 ": Row and column strides should be larger than 0. strides = ", list_to_string(strides));

  const auto& dilations = get_attr<std::vector<std::int64_t>>(attrs, "dilations");
  DAGRAD_REQUIRE(
      dilations.size() == 4, op,
      ": Sliding window dilations field must specify 4 dimensions, got dilations = ", list_to_string(dilations));
  DAGRAD_REQUIRE(dilations[ax.n] == 1 && dilations[ax.c] == 1, op,
                 ": Current implementation does not yet support dilations in the batch and depth dimensions. "
                 "dilations = ",
                 list_to_string(dilations), ", data_format = ", format);
  a.dilation_rows = dilations[ax.h];
  a.dilation_cols = dilations[ax.w];
  DAGRAD_REQUIRE(a.dilation_rows > 0 && a.dilation_cols > 0, op,
                 ": Dilated rates should be larger than 0. dilations = ", list_to_string(dilations));

  const auto& padding = get_attr<std::string>(attrs, "padding");
  if (padding == "SAME")
    a.padding = Padding::Same;
  else if (padding == "VALID")
    a.padding = Padding::Valid;
  else if (padding == "EXPLICIT")
    a.padding = Padding::Explicit;
  else
    invalid_argument(op, ": Invalid padding: '", padding, "'; expected SAME, VALID or EXPLICIT");

  // TF's CheckValidPadding, in its order.
  const auto& explicit_paddings = get_attr<std::vector<std::int64_t>>(attrs, "explicit_paddings");
  if (a.padding == Padding::Explicit) {
    DAGRAD_REQUIRE(explicit_paddings.size() == 8, op,
                   ": explicit_paddings attribute must contain 8 values, but got: ", explicit_paddings.size());
    for (auto p : explicit_paddings) {
      DAGRAD_REQUIRE(p >= 0, op, ": All elements of explicit_paddings must be nonnegative, got explicit_paddings = ",
                     list_to_string(explicit_paddings));
    }
    const auto at = [&](int axis, int side) { return explicit_paddings[static_cast<std::size_t>(2 * axis + side)]; };
    DAGRAD_REQUIRE(at(ax.n, 0) == 0 && at(ax.n, 1) == 0 && at(ax.c, 0) == 0 && at(ax.c, 1) == 0, op,
                   ": Nonzero explicit padding in the batch or depth dimensions is not supported, got "
                   "explicit_paddings = ",
                   list_to_string(explicit_paddings), ", data_format = ", format);
    a.pad_top = at(ax.h, 0);
    a.pad_bottom = at(ax.h, 1);
    a.pad_left = at(ax.w, 0);
    a.pad_right = at(ax.w, 1);
  } else {
    DAGRAD_REQUIRE(explicit_paddings.empty(), op,
                   ": explicit_paddings attribute must be empty if the padding attribute is not EXPLICIT, got "
                   "explicit_paddings = ",
                   list_to_string(explicit_paddings), " with padding = ", padding);
  }
  return a;
}

std::int64_t windowed_output_size(std::int64_t in, std::int64_t filter, std::int64_t dilation, std::int64_t stride,
                                  Padding padding, std::int64_t* pad_before, std::int64_t* pad_after) {
  DAGRAD_REQUIRE(stride > 0, "Stride must be > 0, but got ", stride);
  DAGRAD_REQUIRE(dilation >= 1, "Dilation rate must be >= 1, but got ", dilation);
  DAGRAD_REQUIRE(in >= 0 && filter >= 0, "input size ", in, " and filter size ", filter, " must be non-negative");
  const Wide eff = static_cast<Wide>(filter - 1) * dilation + 1;
  // A filter of size 0 has eff = 1 - dilation <= 0; TF allows it, and so does the arithmetic.
  DAGRAD_REQUIRE(eff <= kMax, "effective filter size (", filter, " - 1) * ", dilation, " + 1 overflows int64");
  // Kernels compute o * stride + k * dilation for in-range o and k; that sum never exceeds
  // in + pad_before + pad_after - 1, so bounding the padded size by int64 makes it overflow-free.
  const auto padded_ok = [&](Wide before, Wide after) {
    DAGRAD_REQUIRE(static_cast<Wide>(in) + before + after <= kMax, "padded input size ", in, " + ",
                   static_cast<std::int64_t>(before), " + ", static_cast<std::int64_t>(after), " overflows int64");
  };
  Wide out = 0;
  switch (padding) {
    case Padding::Valid:
      out = (static_cast<Wide>(in) - eff + stride) / stride;
      *pad_before = *pad_after = 0;
      break;
    case Padding::Explicit:
      DAGRAD_REQUIRE(*pad_before >= 0 && *pad_after >= 0, "explicit paddings must be nonnegative, got ", *pad_before,
                     " and ", *pad_after);
      padded_ok(*pad_before, *pad_after);
      out = (static_cast<Wide>(in) + *pad_before + *pad_after - eff + stride) / stride;
      break;
    case Padding::Same: {
      out = (static_cast<Wide>(in) + stride - 1) / stride;
      const Wide need = std::max<Wide>(0, (out - 1) * stride + eff - in);
      padded_ok(need, 0);
      // For odd totals the extra unit goes after (bottom/right), as in TF.
      *pad_before = static_cast<std::int64_t>(need / 2);
      *pad_after = static_cast<std::int64_t>(need - need / 2);
      break;
    }
  }
  if (out < 0) {
    invalid_argument("Computed output size would be negative: ", static_cast<std::int64_t>(out), " [input_size: ", in,
                     ", effective_filter_size: ", static_cast<std::int64_t>(eff), ", stride: ", stride, "]");
  }
  DAGRAD_REQUIRE(out <= kMax, "output size overflows int64 [input_size: ", in, ", stride: ", stride, "]");
  return static_cast<std::int64_t>(out);
}

Conv2DGeometry conv2d_geometry(std::string_view op, const Conv2DAttrs& attrs, const Shape& input, const Shape& filter) {
  DAGRAD_REQUIRE(input.rank() == 4, op, ": input must be 4-dimensional, got shape ", input.to_string());
  DAGRAD_REQUIRE(filter.rank() == 4, op, ": filter must be 4-dimensional, got shape ", filter.to_string());
  for (int i = 0; i < 4; ++i) {
    DAGRAD_REQUIRE(input[i] >= -1 && filter[i] >= -1, op, ": invalid shapes: input ", input.to_string(), ", filter ",
                   filter.to_string());
  }
  Conv2DGeometry g;
  g.data_format = attrs.data_format;
  const Axes ax = axes_of(attrs.data_format);
  g.batch = input[ax.n];
  g.in_rows = input[ax.h];
  g.in_cols = input[ax.w];
  g.in_depth = input[ax.c];
  g.filter_rows = filter[0];
  g.filter_cols = filter[1];
  g.filter_in_depth = filter[2];
  g.out_depth = filter[3];
  g.stride_rows = attrs.stride_rows;
  g.stride_cols = attrs.stride_cols;
  g.dilation_rows = attrs.dilation_rows;
  g.dilation_cols = attrs.dilation_cols;

  // Grouped convolution: in_depth = groups * filter_in_depth, out_depth divisible by groups.
  // groups stays -1 while either depth is unknown.
  g.groups = Shape::kUnknown;
  if (g.filter_in_depth == 0) {
    invalid_argument(op, ": filter depth must be stricly positive, got ", g.filter_in_depth, " (filter shape ",
                     filter.to_string(), ")");
  }
  if (g.in_depth >= 0 && g.filter_in_depth > 0) {
    DAGRAD_REQUIRE(g.in_depth % g.filter_in_depth == 0, op,
                   ": input depth must be evenly divisible by filter depth: ", g.in_depth, " vs ", g.filter_in_depth);
    g.groups = g.in_depth / g.filter_in_depth;
    DAGRAD_REQUIRE(g.groups > 0, op, ": input depth must be evenly divisible by filter depth: ", g.in_depth, " vs ",
                   g.filter_in_depth, " (an input depth of 0 gives 0 groups)");
    if (g.out_depth >= 0) {
      DAGRAD_REQUIRE(g.out_depth % g.groups == 0, op, ": Depth of output (", g.out_depth,
                     ") is not a multiple of the number of groups (", g.groups, ")");
    }
  }

  g.pad_top = attrs.pad_top;
  g.pad_bottom = attrs.pad_bottom;
  g.pad_left = attrs.pad_left;
  g.pad_right = attrs.pad_right;
  g.out_rows = spatial_output(op, "rows", g.in_rows, g.filter_rows, g.dilation_rows, g.stride_rows, attrs.padding,
                              &g.pad_top, &g.pad_bottom);
  g.out_cols = spatial_output(op, "cols", g.in_cols, g.filter_cols, g.dilation_cols, g.stride_cols, attrs.padding,
                              &g.pad_left, &g.pad_right);
  return g;
}

void check_conv2d_out_backprop(std::string_view op, const Conv2DGeometry& g, const Shape& out_backprop) {
  DAGRAD_REQUIRE(out_backprop.rank() == 4, op, ": out_backprop must be 4-dimensional, got shape ",
                 out_backprop.to_string());
  const Axes ax = axes_of(g.data_format);
  const auto known_and_differ = [](std::int64_t a, std::int64_t b) { return a >= 0 && b >= 0 && a != b; };
  if (known_and_differ(g.batch, out_backprop[ax.n])) {
    invalid_argument(op, ": input and out_backprop must have the same batch size. Input batch: ", g.batch,
                     ", outbackprop batch: ", out_backprop[ax.n], ", batch_dim: ", ax.n);
  }
  if (known_and_differ(g.out_depth, out_backprop[ax.c])) {
    invalid_argument(op, ": filter and out_backprop must have the same out_depth, got filter out_depth ", g.out_depth,
                     " and out_backprop depth ", out_backprop[ax.c]);
  }
  const struct {
    int dim;
    std::int64_t in, filter, computed, stride, dilation;
  } spatial[] = {{ax.h, g.in_rows, g.filter_rows, g.out_rows, g.stride_rows, g.dilation_rows},
                 {ax.w, g.in_cols, g.filter_cols, g.out_cols, g.stride_cols, g.dilation_cols}};
  for (const auto& s : spatial) {
    const std::int64_t actual = out_backprop[s.dim];
    if (known_and_differ(actual, s.computed)) {
      invalid_argument(op, ": Size of out_backprop doesn't match computed: actual = ", actual,
                       ", computed = ", s.computed, " spatial_dim: ", s.dim, " input: ", s.in, " filter: ", s.filter,
                       " output: ", actual, " stride: ", s.stride, " dilation: ", s.dilation);
    }
  }
}

Conv2DGeometry conv2d_backprop_geometry(std::string_view op, const Conv2DAttrs& attrs, const Shape& input,
                                        const Shape& filter, const Shape& out_backprop) {
  // TF checks the ranks in this order: input, filter, out_backprop.
  DAGRAD_REQUIRE(input.rank() == 4, op, ": input must be 4-dimensional, got shape ", input.to_string());
  DAGRAD_REQUIRE(filter.rank() == 4, op, ": filter must be 4-dimensional, got shape ", filter.to_string());
  DAGRAD_REQUIRE(out_backprop.rank() == 4, op, ": out_backprop must be 4-dimensional, got shape ",
                 out_backprop.to_string());
  for (int i = 0; i < 4; ++i) {
    DAGRAD_REQUIRE(out_backprop[i] >= -1, op, ": invalid out_backprop shape ", out_backprop.to_string());
  }
  Conv2DGeometry g = conv2d_geometry(op, attrs, input, filter);
  check_conv2d_out_backprop(op, g, out_backprop);
  // Where the forward output size is unknown, out_backprop may tell it.
  const Axes ax = axes_of(g.data_format);
  if (g.batch < 0) g.batch = out_backprop[ax.n];
  if (g.out_rows < 0) g.out_rows = out_backprop[ax.h];
  if (g.out_cols < 0) g.out_cols = out_backprop[ax.w];
  if (g.out_depth < 0) g.out_depth = out_backprop[ax.c];
  return g;
}

Conv2DGeometry conv2d_geometry(const KernelContext& c) {
  const std::string_view op = c.op_name();
  const bool wrt_input = op == "Conv2DBackpropInput" || op == "Conv2DBackpropInputV2";
  const bool wrt_filter = op == "Conv2DBackpropFilter" || op == "Conv2DBackpropFilterV2";
  if (!wrt_input && !wrt_filter && op != "Conv2D" && op != "_FusedConv2D")
    fail(Code::Internal, op, ": not a conv op, so no conv geometry");
  const Shape& input = wrt_input ? c.output_shape(0) : c.input(0).shape();
  const Shape& filter = wrt_filter ? c.output_shape(0) : c.input(1).shape();
  return conv2d_geometry(op, parse_conv2d_attrs(op, c.attrs()), input, filter);
}

}  // namespace dagrad::ops
