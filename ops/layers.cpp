// Layers and seeded variable initialisers built from ordinary graph nodes.
#include "dagrad/ops/layers.hpp"

#include <algorithm>
#include <cmath>

#include "dagrad/core/random.hpp"
#include "dagrad/ops/array_ops.hpp"
#include "dagrad/ops/compare_ops.hpp"
#include "dagrad/ops/conv2d.hpp"
#include "dagrad/ops/math_ops.hpp"
#include "dagrad/ops/matrix_ops.hpp"
#include "dagrad/ops/nn_ops.hpp"
#include "dagrad/ops/pooling_ops.hpp"
#include "dagrad/ops/shape_ops.hpp"
#include "dagrad/ops/state_ops.hpp"

namespace dagrad::layers {

Tensor glorot_uniform(const Shape& shape, std::int64_t fan_in, std::int64_t fan_out, std::uint64_t seed, DType dtype) {
  if (fan_in <= 0 || fan_out <= 0)
    invalid_argument("glorot_uniform: fan_in and fan_out must be positive, got ", fan_in, " and ", fan_out);
  if (dtype != DType::Float32 && dtype != DType::Float64)
    invalid_argument("glorot_uniform: dtype must be float or double, got ", dtype_name(dtype));
  const double limit = std::sqrt(6.0 / static_cast<double>(fan_in + fan_out));
  Tensor t = Tensor::empty(dtype, shape);
  SplitMix64 rng(seed);
  for (std::int64_t i = 0; i < t.num_elements(); ++i) {
    const double v = limit * (2 * rng.uniform() - 1);
    if (dtype == DType::Float32)
      t.data<float>()[i] = static_cast<float>(v);
    else
      t.data<double>()[i] = v;
  }
  return t;
}

// `name` is the variable's full name, the graph's open scope included (Graph::scoped_name).
std::optional<Output> VariableSet::reusable(std::string_view name, const Shape& shape, DType dtype,
                                            bool trainable) const {
  if (!reuse_) return std::nullopt;
  for (const Output& var : all_) {
    if (var.op().name != name) continue;
    const bool is_trainable =
        std::any_of(trainable_.begin(), trainable_.end(), [&](const Output& t) { return t.node == var.node; });
    if (var.shape() != shape || var.dtype() != dtype || is_trainable != trainable) {
      invalid_argument("VariableSet: reusing '", name, "' (", dtype_name(var.dtype()), " ", var.shape().to_string(),
                       is_trainable ? ", trainable" : "", ") as ", dtype_name(dtype), " ", shape.to_string(),
                       trainable ? ", trainable" : "");
    }
    return var;
  }
  return std::nullopt;
}

Output VariableSet::create(Graph& g, std::string_view name, Tensor initial, bool trainable) {
  if (auto var = reusable(g.scoped_name(name), initial.shape(), initial.dtype(), trainable)) return *var;
  Output var = ops::variable(g, initial.shape(), initial.dtype(), name);
  if (var.op().name != g.scoped_name(name)) {
    invalid_argument("VariableSet: a node named '", g.scoped_name(name), "' already exists");
  }
  initial_values_.push_back(ops::constant(g, std::move(initial), str_cat(name, "/initial_value")));
  all_.push_back(var);
  if (trainable) trainable_.push_back(var);
  return var;
}

Output VariableSet::create_glorot(Graph& g, std::string_view name, const Shape& shape, std::int64_t fan_in,
                                  std::int64_t fan_out, DType dtype) {
  if (auto var = reusable(g.scoped_name(name), shape, dtype, true)) return *var;
  // One stream per variable: adding a layer later does not change the earlier layers' values.
  SplitMix64 stream(seed_, all_.size());
  return create(g, name, glorot_uniform(shape, fan_in, fan_out, stream.next(), dtype));
}

Output VariableSet::create_zeros(Graph& g, std::string_view name, const Shape& shape, DType dtype, bool trainable) {
  if (auto var = reusable(g.scoped_name(name), shape, dtype, trainable)) return *var;
  return create(g, name, Tensor::zeros(dtype, shape), trainable);
}

const Node& VariableSet::initializer(Graph& g, std::string_view name) {
  std::vector<const Node*> assigns;
  {
    auto root = g.root_name_scope();  // named after each variable's full name
    for (std::size_t i = 0; i < all_.size(); ++i) {
      assigns.push_back(&ops::assign(g, all_[i], initial_values_[i], true, str_cat(all_[i].op().name, "/Assign")).op());
    }
  }
  return ops::group(g, assigns, name);
}

Output Layers::conv2d(Output x, std::string_view name, std::int64_t filters, std::int64_t kernel_size,
                      std::int64_t stride, std::string_view padding, bool relu) {
  if (x.shape().rank() != 4 || x.shape()[3] < 0) {
    invalid_argument("Layers::conv2d '", name, "': input must be NHWC with a known channel count, got ",
                     x.shape().to_string());
  }
  const std::int64_t in = x.shape()[3], taps = kernel_size * kernel_size;
  const DType stored = variable_dtype(x.dtype());
  auto scope = g_->name_scope(name);  // NAME/kernel, NAME/Conv2D, ...
  Output kernel = as_compute(vars_->create_glorot(*g_, "kernel", Shape{kernel_size, kernel_size, in, filters},
                                                  taps * in, taps * filters, stored),
                             x.dtype());
  Output bias = as_compute(vars_->create_zeros(*g_, "bias", Shape{filters}, stored), x.dtype());
  Output y = ops::conv2d(*g_, x, kernel, {.strides = {1, stride, stride, 1}, .padding = std::string(padding)});
  y = ops::bias_add(*g_, y, bias, "NHWC");
  return relu ? ops::relu(*g_, y) : y;
}

Output Layers::max_pool(Output x, std::int64_t size, std::int64_t stride, std::string_view padding) {
  return ops::max_pool(
      *g_, x, {.ksize = {1, size, size, 1}, .strides = {1, stride, stride, 1}, .padding = std::string(padding)});
}

Output Layers::flatten(Output x) {
  std::int64_t features = 1;
  for (int i = 1; i < x.shape().rank(); ++i) {
    if (x.shape()[i] < 0)
      invalid_argument("Layers::flatten: dims after the batch must be known, got ", x.shape().to_string());
    features *= x.shape()[i];
  }
  return ops::reshape(*g_, x, std::vector<std::int64_t>{-1, features});
}

Output Layers::dense(Output x, std::string_view name, std::int64_t units, bool relu) {
  if (x.shape().rank() != 2 || x.shape()[1] < 0) {
    invalid_argument("Layers::dense '", name, "': input must be [batch, features] with known features, got ",
                     x.shape().to_string());
  }
  const std::int64_t in = x.shape()[1];
  const DType stored = variable_dtype(x.dtype());
  auto scope = g_->name_scope(name);  // NAME/kernel, NAME/MatMul, ...
  Output kernel = as_compute(vars_->create_glorot(*g_, "kernel", Shape{in, units}, in, units, stored), x.dtype());
  Output bias = as_compute(vars_->create_zeros(*g_, "bias", Shape{units}, stored), x.dtype());
  Output y = ops::bias_add(*g_, ops::mat_mul(*g_, x, kernel), bias, "NHWC");
  return relu ? ops::relu(*g_, y) : y;
}

Output Layers::as_compute(Output variable, DType compute) {
  if (variable.dtype() == compute) return variable;
  auto root = g_->root_name_scope();  // "conv1/kernel/Cast", whatever scope is open
  return ops::cast(*g_, variable, compute, false, str_cat(variable.op().name, "/Cast"));
}

ClassifierMetrics classifier_metrics(Graph& g, Output logits, Output labels) {
  // Mixed precision: the loss and its softmax in float32 (TF's Keras policy does the same).
  if (logits.dtype() == DType::Half || logits.dtype() == DType::BFloat16) logits = ops::cast(g, logits, DType::Float32);
  ClassifierMetrics m;
  m.loss = ops::mean(g, ops::sparse_softmax_cross_entropy_with_logits(g, logits, labels).loss, {0}, false, "loss");
  Output correct = ops::equal(g, ops::arg_max(g, logits, 1, DType::Int32), labels);
  m.accuracy = ops::mean(g, ops::cast(g, correct, DType::Float32), {0}, false, "accuracy");
  return m;
}

}  // namespace dagrad::layers
