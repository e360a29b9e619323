// The one implementation of 2-D convolution geometry (TF's semantics): validation of
// strides/padding/dilations/data_format against shapes, output sizes and padding amounts.
// Shape inference and every backend use it, so they cannot disagree.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "dagrad/core/attr.hpp"

namespace dagrad {
class KernelContext;
}

namespace dagrad::ops {

enum class Padding { Same, Valid, Explicit };
enum class DataFormat { NHWC, NCHW };

// Everything a conv kernel needs, in layout-independent terms. All sizes are int64.
// Guarantee (checked by conv2d_geometry): in + pad_before + pad_after <= INT64_MAX per spatial
// dimension, so for 0 <= o < out and 0 <= k < filter, o * stride + k * dilation never overflows;
// compute an input index as (o * stride + k * dilation) - pad_before.
struct Conv2DGeometry {
  DataFormat data_format = DataFormat::NHWC;
  std::int64_t batch = 0;
  std::int64_t in_rows = 0, in_cols = 0, in_depth = 0;  // in_depth = groups * filter_in_depth
  std::int64_t filter_rows = 0, filter_cols = 0, filter_in_depth = 0, out_depth = 0;
  std::int64_t groups = 1;  // -1 while in_depth or filter_in_depth is unknown
  std::int64_t out_rows = 0, out_cols = 0;
  std::int64_t stride_rows = 1, stride_cols = 1;
  std::int64_t dilation_rows = 1, dilation_cols = 1;
  std::int64_t pad_top = 0, pad_bottom = 0, pad_left = 0, pad_right = 0;

  // Effective filter extent: (k - 1) * dilation + 1.
  std::int64_t effective_filter_rows() const { return (filter_rows - 1) * dilation_rows + 1; }
  std::int64_t effective_filter_cols() const { return (filter_cols - 1) * dilation_cols + 1; }
  std::int64_t out_depth_per_group() const { return out_depth / groups; }

  // Shapes in the op's data_format (the filter is always HWIO).
  std::vector<std::int64_t> input_dims() const;
  std::vector<std::int64_t> output_dims() const;
  std::vector<std::int64_t> filter_dims() const;
  // 2 * N * OH * OW * KH * KW * (C / groups) * K: the flop count of each of the three conv ops.
  double flops() const;
};

// Input position read by output position o through filter tap k along one spatial dimension, or
// -1 if it lies in the padding. In the order the Conv2DGeometry guarantee makes overflow-free.
inline std::int64_t conv_input_pos(std::int64_t o, std::int64_t k, std::int64_t stride, std::int64_t dilation,
                                   std::int64_t pad, std::int64_t size) {
  const std::int64_t i = (o * stride + k * dilation) - pad;
  return i >= 0 && i < size ? i : -1;
}

// The output position that reads input position i through tap k, or -1 if none does:
// o * stride = i + pad - k * dilation must be a non-negative multiple of stride below out_size.
inline std::int64_t conv_output_pos(std::int64_t i, std::int64_t k, std::int64_t stride, std::int64_t dilation,
                                    std::int64_t pad, std::int64_t out_size) {
  const std::int64_t t = (i + pad) - k * dilation;
  if (t < 0 || t % stride != 0) return -1;
  return t / stride < out_size ? t / stride : -1;
}

// The filter taps k = first, first + step, ... <= last along one spatial dimension (none when
// first > last), found in closed form so that no kernel scans taps that touch nothing.
struct TapProgression {
  std::int64_t first = 0, last = -1, step = 1;
  bool empty() const { return first > last; }
  std::int64_t count() const { return empty() ? 0 : (last - first) / step + 1; }
  // The first tap >= k, or last + 1 when there is none. No overflow for any k <= last.
  std::int64_t next(std::int64_t k) const {
    if (k <= first) return first;
    if (k > last) return last + 1;
    const std::int64_t d = k - first, q = d / step + (d % step != 0);
    return q <= (last - first) / step ? first + q * step : last + 1;
  }
};

// The taps through which output position o reads inside [0, size): conv_input_pos(o, k, ...) >= 0
// exactly for them (step 1). Overflow-free under the Conv2DGeometry guarantee.
TapProgression conv_input_taps(std::int64_t o, std::int64_t stride, std::int64_t dilation, std::int64_t pad,
                               std::int64_t size, std::int64_t filter);

// The taps through which input position i reaches an output position in [0, out_size):
// conv_output_pos(i, k, ...) >= 0 exactly for them. They form one progression (k * dilation must
// be congruent to i + pad modulo stride); the modular inverse that finds it is computed once here.
class ConvOutputTaps {
 public:
  ConvOutputTaps(std::int64_t stride, std::int64_t dilation, std::int64_t pad, std::int64_t out_size,
                 std::int64_t filter);
  TapProgression at(std::int64_t i) const;

 private:
  std::int64_t stride_, dilation_, pad_, out_size_, filter_;
  std::int64_t gcd_ = 1, period_ = 1, inverse_ = 0;  // period = stride / gcd; inverse of dilation / gcd mod period
};

// Sum over output positions o of conv_input_taps(o, ...).count(): the (output, tap) pairs that
// read real input along one dimension, for planners that bound the work spent on padding.
std::int64_t conv_real_tap_pairs(std::int64_t out_size, std::int64_t stride, std::int64_t dilation, std::int64_t pad,
                                 std::int64_t size, std::int64_t filter);

// Parsed, validated conv attributes (TF's messages on bad values), independent of shapes.
struct Conv2DAttrs {
  DataFormat data_format = DataFormat::NHWC;
  Padding padding = Padding::Valid;
  std::int64_t stride_rows = 1, stride_cols = 1;
  std::int64_t dilation_rows = 1, dilation_cols = 1;
  std::int64_t pad_top = 0, pad_bottom = 0, pad_left = 0, pad_right = 0;  // EXPLICIT only
};

// `op` names the op in error messages ("Conv2D", "Conv2DBackpropFilter", ...).
Conv2DAttrs parse_conv2d_attrs(std::string_view op, const AttrMap& attrs);

// Computes the geometry from the input shape and the filter shape (HWIO) and validates them
// together. Unknown dims (-1) propagate to unknown output dims.
Conv2DGeometry conv2d_geometry(std::string_view op, const Conv2DAttrs& attrs, const Shape& input, const Shape& filter);

// The geometry of a conv kernel's call (Conv2D, Conv2DBackpropInput(V2), Conv2DBackpropFilter(V2))
// from its attributes and run-time shapes: the activation shape is input 0's, or output 0's for
// the input gradient (V1 gives only its sizes); the filter shape is input 1's, or output 0's for
// the filter gradient. Every backend's conv kernels start here. Another op: Internal.
Conv2DGeometry conv2d_geometry(const KernelContext& context);

// The backprop ops' checks of out_backprop against the geometry (rank, batch, depth and each
// spatial size, TF's wording: "Size of out_backprop doesn't match computed: ..."). Unknown dims pass.
void check_conv2d_out_backprop(std::string_view op, const Conv2DGeometry& geometry, const Shape& out_backprop);

// conv2d_geometry followed by check_conv2d_out_backprop; dims still unknown in the geometry
// (batch, out_rows, out_cols, out_depth) are taken from out_backprop where it knows them.
Conv2DGeometry conv2d_backprop_geometry(std::string_view op, const Conv2DAttrs& attrs, const Shape& input,
                                        const Shape& filter, const Shape& out_backprop);

// TF's GetWindowedOutputSizeVerbose for one spatial dimension: returns the output size and
// sets the padding before/after. Throws InvalidArgument on negative output or bad padding.
std::int64_t windowed_output_size(std::int64_t in, std::int64_t filter, std::int64_t dilation, std::int64_t stride,
                                  Padding padding, std::int64_t* pad_before, std::int64_t* pad_after);

}  // namespace dagrad::ops
