// MaxPool, AvgPool, their gradients and MaxPoolGradGrad: TF's ksize/strides/padding/data_format
// semantics (EXPLICIT padding with explicit_paddings for the max-pool ops, as TF's MaxPool and
// MaxPoolGrad), the window geometry every backend shares, and the graph builders.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "dagrad/core/graph.hpp"
#include "dagrad/ops/raw_op_attrs.hpp"

namespace dagrad::ops {

// A validated 2-D pooling window over a 4-D input. Sizes are int64; unknown dims stay -1.
struct Pool2DGeometry {
  bool nchw = false;
  std::int64_t batch = 0, rows = 0, cols = 0, depth = 0;
  std::int64_t window_rows = 1, window_cols = 1, stride_rows = 1, stride_cols = 1;
  std::int64_t out_rows = 0, out_cols = 0;
  // Padding before each spatial dim. SAME pads the rest at the bottom/right; EXPLICIT pads are
  // each smaller than the window (TF's rule), so a window is empty only over an empty input.
  std::int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;

  // Element offsets of (n, row, col, channel) in the input and the output, in the data format.
  std::int64_t in_offset(std::int64_t n, std::int64_t r, std::int64_t c, std::int64_t d) const {
    return nchw ? ((n * depth + d) * rows + r) * cols + c : ((n * rows + r) * cols + c) * depth + d;
  }
  std::int64_t out_offset(std::int64_t n, std::int64_t r, std::int64_t c, std::int64_t d) const {
    return nchw ? ((n * depth + d) * out_rows + r) * out_cols + c : ((n * out_rows + r) * out_cols + c) * depth + d;
  }
  Shape output_shape() const;
};

// Validates ksize/strides/padding/explicit_paddings/data_format (TF's messages) against the input
// shape. explicit_paddings is read only where the op has it (the max-pool ops).
Pool2DGeometry pool2d_geometry(std::string_view op, const AttrMap& attrs, const Shape& input);

struct PoolOptions {
  std::vector<std::int64_t> ksize;              // 4 entries in data_format order, e.g. {1, 2, 2, 1}
  std::vector<std::int64_t> strides;            // 4 entries
  std::string padding = "VALID";                // "SAME", "VALID", or "EXPLICIT" (max-pool ops only)
  std::vector<std::int64_t> explicit_paddings;  // 8 entries (before, after per dim) iff EXPLICIT
  std::string data_format = "NHWC";
};

Output max_pool(Graph& g, Output input, const PoolOptions& options, std::string_view name = {});
Output max_pool_grad(Graph& g, Output orig_input, Output orig_output, Output grad, const PoolOptions& options,
                     std::string_view name = {});
Output max_pool_grad_grad(Graph& g, Output orig_input, Output orig_output, Output grad, const PoolOptions& options,
                          std::string_view name = {});
Output avg_pool(Graph& g, Output value, const PoolOptions& options, std::string_view name = {});
// orig_input_shape: an int32 vector of 4 dims.
Output avg_pool_grad(Graph& g, Output orig_input_shape, Output grad, const PoolOptions& options,
                     std::string_view name = {});

}  // namespace dagrad::ops

// Eager ops, argument for argument like tf.raw_ops (defined in pooling_raw_ops.cpp). ksize,
// strides and padding are required, as in TF (left empty they are refused in TF's words).
namespace dagrad::raw_ops {

struct MaxPoolAttrs {  // MaxPool, MaxPoolGrad, MaxPoolGradGrad
  std::vector<std::int64_t> ksize;
  std::vector<std::int64_t> strides;
  std::string_view padding = {};                // "SAME", "VALID" or "EXPLICIT"
  std::vector<std::int64_t> explicit_paddings;  // 8 values iff EXPLICIT
  std::string_view data_format = "NHWC";
  std::string_view name = {};
};
struct AvgPoolAttrs {  // AvgPool, AvgPoolGrad: no EXPLICIT padding, as in TF
  std::vector<std::int64_t> ksize;
  std::vector<std::int64_t> strides;
  std::string_view padding = {};  // "SAME" or "VALID"
  std::string_view data_format = "NHWC";
  std::string_view name = {};
};

Tensor MaxPool(const Tensor& input, const MaxPoolAttrs& attrs);
Tensor MaxPoolGrad(const Tensor& orig_input, const Tensor& orig_output, const Tensor& grad, const MaxPoolAttrs& attrs);
Tensor MaxPoolGradGrad(const Tensor& orig_input, const Tensor& orig_output, const Tensor& grad,
                       const MaxPoolAttrs& attrs);
Tensor AvgPool(const Tensor& value, const AvgPoolAttrs& attrs);
// orig_input_shape: an int32 vector of 4 dims.
Tensor AvgPoolGrad(const Tensor& orig_input_shape, const Tensor& grad, const AvgPoolAttrs& attrs);

}  // namespace dagrad::raw_ops
