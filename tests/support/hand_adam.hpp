// Adam updates built node by node, for the tests of the Adam rewrite: float32 variables of shape
// [3] (0.5 each), TF's default scalars and one gradient, which every update shares.
#pragma once

#include <utility>
#include <vector>

#include <dagrad/dagrad.hpp>
#include <dagrad/ops/layers.hpp>

namespace dagrad::testing {

struct HandAdam {
  Graph& g;
  layers::VariableSet vars{1};
  std::vector<Output> scalars;  // beta1_power, beta2_power, lr, beta1, beta2, epsilon
  Output grad;

  HandAdam(Graph& graph, const Tensor& gradient) : g(graph), grad(ops::constant(graph, gradient)) {
    for (double value : {0.9, 0.999, 0.01, 0.9, 0.999, 1e-7}) scalars.push_back(ops::scalar(g, value, DType::Float32));
  }
  Output variable(const char* name) { return vars.create(g, name, Tensor::full(DType::Float32, Shape{3}, 0.5)); }
  // An ApplyAdam node of var, m and v.
  const Node& update(Output var, Output m, Output v, const char* name, std::vector<int> deps = {}) {
    std::vector<Output> inputs{var, m, v};
    inputs.insert(inputs.end(), scalars.begin(), scalars.end());
    inputs.push_back(grad);
    return g.add_node("ApplyAdam", inputs, {}, name, std::move(deps));
  }
};

}  // namespace dagrad::testing
