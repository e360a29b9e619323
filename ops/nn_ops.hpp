// Graph builders for BiasAdd, BiasAddGrad, Relu, ReluGrad, Softmax, LogSoftmax and the two
// softmax cross-entropy losses (TF's names, attributes and semantics).
#pragma once

#include <string_view>

#include "dagrad/core/graph.hpp"
#include "dagrad/ops/raw_op_attrs.hpp"

namespace dagrad::ops {

// The channel axis BiasAdd adds along: 1 for NCHW, the last axis for NHWC (any rank >= 2).
int bias_channel_axis(int rank, std::string_view data_format);

// (outer, channels, inner) view of a BiasAdd operand: element (o, c, i) is at (o * C + c) * inner + i.
// Every backend's BiasAdd and BiasAddGrad walk this view.
struct ChannelSplit {
  std::int64_t outer = 1, channels = 1, inner = 1;
};
ChannelSplit split_at_channel(const Shape& shape, std::string_view data_format);

// SparseSoftmaxCrossEntropyWithLogits' check of its `rows` host labels: throws TF's
// InvalidArgument, listing the first 32 labels, if one lies outside [0, classes).
void check_sparse_labels(const std::int32_t* label, std::int64_t rows, std::int64_t classes);
void check_sparse_labels(const std::int64_t* label, std::int64_t rows, std::int64_t classes);

Output bias_add(Graph& g, Output value, Output bias, std::string_view data_format = "NHWC", std::string_view name = {});
Output bias_add_grad(Graph& g, Output out_backprop, std::string_view data_format = "NHWC", std::string_view name = {});
Output relu(Graph& g, Output features, std::string_view name = {});
// ReluGrad(gradients, features) = gradients where features > 0, else 0.
Output relu_grad(Graph& g, Output gradients, Output features, std::string_view name = {});
Output softmax(Graph& g, Output logits, std::string_view name = {});
Output log_softmax(Graph& g, Output logits, std::string_view name = {});

// Both losses have two outputs: the per-example loss [batch] and its gradient [batch, classes].
struct CrossEntropy {
  Output loss;
  Output backprop;
};
CrossEntropy softmax_cross_entropy_with_logits(Graph& g, Output features, Output labels, std::string_view name = {});
// labels are class indices (int32 or int64) in [0, classes).
CrossEntropy sparse_softmax_cross_entropy_with_logits(Graph& g, Output features, Output labels,
                                                      std::string_view name = {});

}  // namespace dagrad::ops

// Eager ops, argument for argument like tf.raw_ops (defined in nn_raw_ops.cpp).
namespace dagrad::raw_ops {

struct BiasAddAttrs {  // BiasAdd, BiasAddGrad
  std::string_view data_format = "NHWC";
  std::string_view name = {};
};
struct CrossEntropyResult {  // tf.raw_ops' (loss, backprop)
  Tensor loss, backprop;
};

Tensor BiasAdd(const Tensor& value, const Tensor& bias, const BiasAddAttrs& attrs = {});
Tensor BiasAddGrad(const Tensor& out_backprop, const BiasAddAttrs& attrs = {});
Tensor Relu(const Tensor& features, const NameOnly& attrs = {});
Tensor ReluGrad(const Tensor& gradients, const Tensor& features, const NameOnly& attrs = {});
Tensor Softmax(const Tensor& logits, const NameOnly& attrs = {});
Tensor LogSoftmax(const Tensor& logits, const NameOnly& attrs = {});
CrossEntropyResult SoftmaxCrossEntropyWithLogits(const Tensor& features, const Tensor& labels,
                                                 const NameOnly& attrs = {});
// labels: int32 or int64 class indices.
CrossEntropyResult SparseSoftmaxCrossEntropyWithLogits(const Tensor& features, const Tensor& labels,
                                                       const NameOnly& attrs = {});

}  // namespace dagrad::raw_ops
