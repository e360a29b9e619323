// Conv2D, Conv2DBackpropInput(V2) and Conv2DBackpropFilter(V2): graph builders and eager raw ops
// with TensorFlow's arguments, attribute names and defaults.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dagrad/core/graph.hpp"
#include "dagrad/core/tensor.hpp"

namespace dagrad::ops {

// The attributes of all five ops, in tf.raw_ops' argument order, so designated initialisers read
// like the Python call: {.strides = {1, 2, 2, 1}, .padding = "SAME"}. strides and padding are
// required (left empty they are rejected with TF's messages); strides, dilations and
// explicit_paddings follow data_format's order; the filter is always HWIO.
struct Conv2DOptions {
  std::vector<std::int64_t> strides;
  std::string padding;  // "SAME", "VALID" or "EXPLICIT"
  bool use_cudnn_on_gpu = true;
  std::vector<std::int64_t> explicit_paddings;  // 8 values (before, after per dim) iff EXPLICIT
  std::string data_format = "NHWC";             // or "NCHW"
  std::vector<std::int64_t> dilations = {1, 1, 1, 1};
  std::string name;  // node name (graph) or error-message name (eager)
};

// The attribute map the options stand for (every attribute but T).
AttrMap conv2d_attr_map(const Conv2DOptions& options);

// output = Conv2D(input, filter).
Output conv2d(Graph& g, Output input, Output filter, const Conv2DOptions& options);
// d(output)/d(input) given out_backprop; input_sizes is an int32 vector of 4 (or 2 spatial) sizes.
Output conv2d_backprop_input(Graph& g, Output input_sizes, Output filter, Output out_backprop,
                             const Conv2DOptions& options);
// The same with input_sizes made an int32 Const from a fully defined shape.
Output conv2d_backprop_input(Graph& g, const Shape& input_sizes, Output filter, Output out_backprop,
                             const Conv2DOptions& options);
// The same; only the shape of `input` is used.
Output conv2d_backprop_input_v2(Graph& g, Output input, Output filter, Output out_backprop,
                                const Conv2DOptions& options);
// d(output)/d(filter) given out_backprop; filter_sizes is an int32 vector of 4 sizes (HWIO).
Output conv2d_backprop_filter(Graph& g, Output input, Output filter_sizes, Output out_backprop,
                              const Conv2DOptions& options);
Output conv2d_backprop_filter(Graph& g, Output input, const Shape& filter_sizes, Output out_backprop,
                              const Conv2DOptions& options);
// The same; only the shape of `filter` is used.
Output conv2d_backprop_filter_v2(Graph& g, Output input, Output filter, Output out_backprop,
                                 const Conv2DOptions& options);

// An int32 vector holding a fully defined shape (input_sizes / filter_sizes values).
Tensor shape_to_int32_tensor(std::string_view op, const Shape& shape);

}  // namespace dagrad::ops

namespace dagrad::raw_ops {

using Conv2DOptions = ops::Conv2DOptions;

// Eager ops, argument for argument like tf.raw_ops; they run through run_op, so validation and
// kernels are those of a graph node.
Tensor Conv2D(const Tensor& input, const Tensor& filter, const Conv2DOptions& options);
Tensor Conv2DBackpropInput(const Tensor& input_sizes, const Tensor& filter, const Tensor& out_backprop,
                           const Conv2DOptions& options);
Tensor Conv2DBackpropInputV2(const Tensor& input, const Tensor& filter, const Tensor& out_backprop,
                             const Conv2DOptions& options);
Tensor Conv2DBackpropFilter(const Tensor& input, const Tensor& filter_sizes, const Tensor& out_backprop,
                            const Conv2DOptions& options);
Tensor Conv2DBackpropFilterV2(const Tensor& input, const Tensor& filter, const Tensor& out_backprop,
                              const Conv2DOptions& options);

}  // namespace dagrad::raw_ops
