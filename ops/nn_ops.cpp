// Schemas and builders: BiasAdd, BiasAddGrad, Relu, ReluGrad, Softmax, LogSoftmax,
// SoftmaxCrossEntropyWithLogits, SparseSoftmaxCrossEntropyWithLogits; and the host helpers
// every backend's kernels of these ops share.
#include "dagrad/ops/nn_ops.hpp"

#include <algorithm>
#include <string>

#include "dagrad/ops/register.hpp"
#include "dagrad/ops/shape_util.hpp"

namespace dagrad::ops {
namespace {

const std::vector<DType> kFloats(std::begin(kFloatingDTypes), std::end(kFloatingDTypes));

// Merges two dims that must agree; -1 is unknown. Returns false on a conflict.
bool merge_dim(std::int64_t a, std::int64_t b, std::int64_t* out) {
  if (a >= 0 && b >= 0 && a != b) return false;
  *out = a >= 0 ? a : b;
  return true;
}

void bias_add_shape(ShapeContext& c) {
  const Shape& value = c.input_shape(0);
  const Shape& bias = c.input_shape(1);
  if (value.rank() < 2) invalid_argument("BiasAdd: Input tensor must be at least 2D: ", value.to_string());
  if (bias.rank() != 1) invalid_argument("BiasAdd: Biases must be 1D: ", bias.to_string());
  const int axis = bias_channel_axis(value.rank(), c.attr<std::string>("data_format"));
  Shape out = value;
  if (!merge_dim(value[axis], bias[0], &out[axis])) {
    invalid_argument("BiasAdd: Must provide as many biases as the channel dimension of the input tensor: ",
                     bias.to_string(), " vs. ", value.to_string());
  }
  c.set_output(0, out);
}

void bias_add_grad_shape(ShapeContext& c) {
  const Shape& grad = c.input_shape(0);
  if (grad.rank() < 2) invalid_argument("BiasAddGrad: Input tensor must be at least 2D: ", grad.to_string());
  c.set_output(0, Shape{grad[bias_channel_axis(grad.rank(), c.attr<std::string>("data_format"))]});
}

void relu_grad_shape(ShapeContext& c) {
  const Shape& g = c.input_shape(0);
  const Shape& f = c.input_shape(1);
  Shape out = g;
  bool ok = g.rank() == f.rank();
  for (int i = 0; ok && i < g.rank(); ++i) ok = merge_dim(g[i], f[i], &out[i]);
  if (!ok) {
    invalid_argument(c.op_name(), ": gradients and features must have the same shape: ", g.to_string(), " vs. ",
                     f.to_string());
  }
  c.set_output(0, out);
}

void softmax_shape(ShapeContext& c) {
  if (c.input_shape(0).rank() < 1) {
    invalid_argument(c.op_name(), ": logits must have >= 1 dimension, got ", c.input_shape(0).to_string());
  }
  c.set_output(0, c.input_shape(0));
}

void xent_shape(ShapeContext& c) {
  const Shape& logits = c.input_shape(0);
  const Shape& labels = c.input_shape(1);
  if (logits.rank() != 2 || labels.rank() != 2) {
    invalid_argument("SoftmaxCrossEntropyWithLogits: logits and labels must be 2-dimensional: logits_size=",
                     logits.to_string(), " labels_size=", labels.to_string());
  }
  Shape out = logits;
  if (!merge_dim(logits[0], labels[0], &out[0]) || !merge_dim(logits[1], labels[1], &out[1])) {
    invalid_argument("SoftmaxCrossEntropyWithLogits: logits and labels must be same size: logits_size=",
                     logits.to_string(), " labels_size=", labels.to_string());
  }
  c.set_output(0, Shape{out[0]});
  c.set_output(1, out);
}

void sparse_xent_shape(ShapeContext& c) {
  const Shape& logits = c.input_shape(0);
  const Shape& labels = c.input_shape(1);
  if (logits.rank() != 2) {
    invalid_argument("SparseSoftmaxCrossEntropyWithLogits: logits must be 2-D, but got shape ", logits.to_string());
  }
  if (labels.rank() != 1) {
    invalid_argument("SparseSoftmaxCrossEntropyWithLogits: labels must be 1-D, but got shape ", labels.to_string());
  }
  Shape out = logits;
  if (!merge_dim(logits[0], labels[0], &out[0])) {
    invalid_argument(
        "SparseSoftmaxCrossEntropyWithLogits: logits and labels must have the same first dimension, "
        "got logits shape ",
        logits.to_string(), " and labels shape ", labels.to_string());
  }
  c.set_output(0, Shape{out[0]});
  c.set_output(1, out);
}

template <class Label>
void check_labels(const Label* label, std::int64_t rows, std::int64_t classes) {
  for (std::int64_t r = 0; r < rows; ++r) {
    if (label[r] < 0 || label[r] >= classes) {
      std::string values;
      for (std::int64_t i = 0; i < std::min<std::int64_t>(rows, 32); ++i) values += str_cat(i ? " " : "", label[i]);
      invalid_argument("SparseSoftmaxCrossEntropyWithLogits: Received a label value of ", label[r],
                       " which is outside the valid range of [0, ", classes, ").  Label values: ", values);
    }
  }
}

}  // namespace

void check_sparse_labels(const std::int32_t* label, std::int64_t rows, std::int64_t classes) {
  check_labels(label, rows, classes);
}
void check_sparse_labels(const std::int64_t* label, std::int64_t rows, std::int64_t classes) {
  check_labels(label, rows, classes);
}

int bias_channel_axis(int rank, std::string_view data_format) { return data_format == "NCHW" ? 1 : rank - 1; }

ChannelSplit split_at_channel(const Shape& shape, std::string_view data_format) {
  const int axis = bias_channel_axis(shape.rank(), data_format);
  ChannelSplit s;
  for (int i = 0; i < shape.rank(); ++i) {
    // Checked: the dims of an empty tensor may multiply past int64 (callers skip empty tensors).
    if (i < axis)
      s.outer = checked_mul(s.outer, shape[i], "bias outer size");
    else if (i > axis)
      s.inner = checked_mul(s.inner, shape[i], "bias inner size");
  }
  s.channels = shape[axis];
  return s;
}

void register_nn_ops(OpRegistry& r) {
  const std::vector<std::string> formats = {"NHWC", "NCHW"};
  r.add(OpDefBuilder("BiasAdd")
            .input("value", "T")
            .input("bias", "T")
            .output("output", "T")
            .attr_type("T", kFloats)
            .attr_string("data_format", formats, "NHWC")
            .shape_fn(bias_add_shape)
            .cost(one_flop_per_output)
            .doc("value + bias, the 1-D bias broadcast along the channel axis given by data_format.")
            .build());
  r.add(OpDefBuilder("BiasAddGrad")
            .input("out_backprop", "T")
            .output("output", "T")
            .attr_type("T", kFloats)
            .attr_string("data_format", formats, "NHWC")
            .shape_fn(bias_add_grad_shape)
            .cost(one_flop_per_input)
            .doc("The gradient of BiasAdd for the bias: out_backprop summed over every axis but the channel.")
            .build());
  r.add(OpDefBuilder("Relu")
            .input("features", "T")
            .output("activations", "T")
            .attr_type("T", kFloats)
            .shape_fn(same_shape_as_input)
            .cost(one_flop_per_output)
            .doc("max(features, 0).")
            .build());
  r.add(OpDefBuilder("ReluGrad")
            .input("gradients", "T")
            .input("features", "T")
            .output("backprops", "T")
            .attr_type("T", kFloats)
            .shape_fn(relu_grad_shape)
            .cost(one_flop_per_output)
            .doc("gradients * (features > 0).")
            .build());
  r.add(OpDefBuilder("Softmax")
            .input("logits", "T")
            .output("softmax", "T")
            .attr_type("T", kFloats)
            .shape_fn(softmax_shape)
            .doc("exp(logits) / sum(exp(logits)) along the last axis.")
            .build());
  r.add(OpDefBuilder("LogSoftmax")
            .input("logits", "T")
            .output("logsoftmax", "T")
            .attr_type("T", kFloats)
            .shape_fn(softmax_shape)
            .doc("logits - log(sum(exp(logits))) along the last axis.")
            .build());
  r.add(OpDefBuilder("SoftmaxCrossEntropyWithLogits")
            .input("features", "T")
            .input("labels", "T")
            .output("loss", "T")
            .output("backprop", "T")
            .attr_type("T", kFloats)
            .shape_fn(xent_shape)
            .doc("Per-row cross entropy of softmax(features) against label distributions, and its gradient "
                 "softmax(features) - labels.")
            .build());
  r.add(OpDefBuilder("SparseSoftmaxCrossEntropyWithLogits")
            .input("features", "T")
            .input("labels", "Tlabels")
            .output("loss", "T")
            .output("backprop", "T")
            .attr_type("T", kFloats)
            .attr_type("Tlabels", {DType::Int32, DType::Int64}, DType::Int64)
            .shape_fn(sparse_xent_shape)
            .doc("Per-row cross entropy of softmax(features) against class indices, and its gradient "
                 "softmax(features) - one_hot(labels).")
            .build());
}

Output bias_add(Graph& g, Output value, Output bias, std::string_view data_format, std::string_view name) {
  return g.output(g.add_node("BiasAdd", {value, bias}, {{"data_format", std::string(data_format)}}, name).id);
}
Output bias_add_grad(Graph& g, Output out_backprop, std::string_view data_format, std::string_view name) {
  return g.output(g.add_node("BiasAddGrad", {out_backprop}, {{"data_format", std::string(data_format)}}, name).id);
}
Output relu(Graph& g, Output features, std::string_view name) {
  return g.output(g.add_node("Relu", {features}, {}, name).id);
}
Output relu_grad(Graph& g, Output gradients, Output features, std::string_view name) {
  return g.output(g.add_node("ReluGrad", {gradients, features}, {}, name).id);
}
Output softmax(Graph& g, Output logits, std::string_view name) {
  return g.output(g.add_node("Softmax", {logits}, {}, name).id);
}
Output log_softmax(Graph& g, Output logits, std::string_view name) {
  return g.output(g.add_node("LogSoftmax", {logits}, {}, name).id);
}
CrossEntropy softmax_cross_entropy_with_logits(Graph& g, Output features, Output labels, std::string_view name) {
  const int id = g.add_node("SoftmaxCrossEntropyWithLogits", {features, labels}, {}, name).id;
  return {g.output(id, 0), g.output(id, 1)};
}
CrossEntropy sparse_softmax_cross_entropy_with_logits(Graph& g, Output features, Output labels, std::string_view name) {
  const int id = g.add_node("SparseSoftmaxCrossEntropyWithLogits", {features, labels}, {}, name).id;
  return {g.output(id, 0), g.output(id, 1)};
}

}  // namespace dagrad::ops
