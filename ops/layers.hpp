// A thin layer helper over the raw graph API, so a model reads like a model (conv2d + bias +
// relu, max_pool, flatten, dense) while every node stays a plain graph node. Variables get
// seeded initial values (Glorot uniform or zeros) and one initializer node assigns them all.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dagrad/core/graph.hpp"

namespace dagrad::layers {

// Glorot (Xavier) uniform: U(-l, l) with l = sqrt(6 / (fan_in + fan_out)); float32 or float64.
Tensor glorot_uniform(const Shape& shape, std::int64_t fan_in, std::int64_t fan_out, std::uint64_t seed,
                      DType dtype = DType::Float32);

// The variables of a model, each with its initial value.
class VariableSet {
 public:
  explicit VariableSet(std::uint64_t seed) : seed_(seed) {}

  // A VariableV2 node named `name` (under the graph's open name scopes) whose initial value is
  // `initial`. Trainable variables are
  // the ones an optimiser updates; slots and counters are not.
  Output create(Graph& g, std::string_view name, Tensor initial, bool trainable = true);
  // Glorot-uniform initial value from the set's seed and the variable's position in the set.
  Output create_glorot(Graph& g, std::string_view name, const Shape& shape, std::int64_t fan_in, std::int64_t fan_out,
                       DType dtype = DType::Float32);
  Output create_zeros(Graph& g, std::string_view name, const Shape& shape, DType dtype = DType::Float32,
                      bool trainable = true);

  // With reuse on, creating a variable that the set already holds returns that variable (after
  // checking its shape, dtype and trainability) instead of failing: TF's variable-scope reuse,
  // for building one model several times over shared weights (data-parallel micro-shards).
  void reuse_variables(bool on) { reuse_ = on; }

  const std::vector<Output>& trainable() const { return trainable_; }
  const std::vector<Output>& all() const { return all_; }
  // A NoOp depending on one Assign(variable, Const(initial)) per variable created so far.
  const Node& initializer(Graph& g, std::string_view name = "init");

 private:
  // The variable `name` when reuse is on and the set holds it (checked against the request).
  std::optional<Output> reusable(std::string_view name, const Shape& shape, DType dtype, bool trainable) const;

  std::uint64_t seed_;
  bool reuse_ = false;
  std::vector<Output> all_, trainable_, initial_values_;
};

// The training loss and the accuracy of a classifier: the batch mean of the sparse softmax
// cross-entropy of logits [batch, classes] against int32 labels [batch] (node "loss"), and the
// fraction of rows whose arg-max is the label (node "accuracy"), both float32 scalars.
struct ClassifierMetrics {
  Output loss, accuracy;
};
ClassifierMetrics classifier_metrics(Graph& g, Output logits, Output labels);

// Builds layers into a graph, NHWC. Layers compute in their input's dtype. Their variables have
// that dtype too, unless `master` names another: then they are kept in `master` (float32 master
// weights for bfloat16 or half compute: mixed precision) and each layer casts them to its input's
// dtype, so their gradients, and the optimiser's updates, are in `master`.
class Layers {
 public:
  Layers(Graph& g, VariableSet& variables, std::optional<DType> master = std::nullopt)
      : g_(&g), vars_(&variables), master_(master) {}

  // conv (HWIO kernel, Glorot) + bias (zeros) [+ relu] in name scope NAME (a TF node name):
  // variables NAME/kernel and NAME/bias, nodes NAME/Conv2D, NAME/BiasAdd, NAME/Relu.
  Output conv2d(Output x, std::string_view name, std::int64_t filters, std::int64_t kernel_size,
                std::int64_t stride = 1, std::string_view padding = "SAME", bool relu = true);
  Output max_pool(Output x, std::int64_t size = 2, std::int64_t stride = 2, std::string_view padding = "VALID");
  // [batch, ...] -> [batch, product of the rest].
  Output flatten(Output x);
  // x @ kernel + bias [+ relu] in name scope NAME: variables NAME/kernel and NAME/bias, nodes
  // NAME/MatMul, NAME/BiasAdd, NAME/Relu.
  Output dense(Output x, std::string_view name, std::int64_t units, bool relu = false);

 private:
  // A new variable's dtype for an input of dtype `compute`, and the variable as that input's dtype.
  DType variable_dtype(DType compute) const { return master_.value_or(compute); }
  Output as_compute(Output variable, DType compute);

  Graph* g_;
  VariableSet* vars_;
  std::optional<DType> master_;
};

}  // namespace dagrad::layers
