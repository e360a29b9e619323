// Swish and Sigmoid as an op library: what an op needs to be a first-class dagrad op.
#include "swish_op.hpp"

#include <cmath>

#include <dagrad/ops/array_ops.hpp>
#include <dagrad/ops/math_ops.hpp>
#include <dagrad/ops/shape_util.hpp>

namespace swish {
namespace {

using namespace dagrad;

constexpr auto kCpu = Device::Kind::CPU;
// The dtypes both ops allow: every kernel below is made for each of them.
constexpr std::initializer_list<DType> kDTypes = {DType::Half, DType::BFloat16, DType::Float32, DType::Float64};

template <class A>
A logistic(A x) {
  return A(1) / (A(1) + std::exp(-x));  // exp overflows to inf for x < -709 (double): 0, as it should
}

// The reference kernels: the definition in double, rounded once to T (the oracle of `check`).
template <class T, bool kTimesX>
KernelFn reference_kernel() {
  return [](KernelContext& c) {
    const T* x = c.input(0).data<T>();
    Tensor& out = c.allocate_output(0);
    T* y = out.data<T>();
    for (std::int64_t i = 0; i < out.num_elements(); ++i) {
      const double v = widen<T>(x[i]);
      y[i] = narrow<T>(kTimesX ? v * logistic(v) : logistic(v));
    }
  };
}

// The CPU kernels: float arithmetic for half, bfloat16 and float (double for double), written
// over the input when dagrad allows it (KernelContext::forward_input_or_allocate_output).
template <class T, bool kTimesX>
KernelFn cpu_kernel() {
  return [](KernelContext& c) {
    using Acc = accumulator_t<T>;
    const T* x = c.input(0).data<T>();
    Tensor& out = c.forward_input_or_allocate_output({0}, 0);
    T* y = out.data<T>();
    for (std::int64_t i = 0; i < out.num_elements(); ++i) {
      const Acc v = static_cast<Acc>(x[i]);
      y[i] = static_cast<T>(kTimesX ? v * logistic(v) : logistic(v));
    }
  };
}

OpDef unary_op(const char* name, const char* doc) {
  return OpDefBuilder(name)
      .input("x", "T")
      .output("y", "T")
      .attr_type("T", kDTypes)
      .shape_fn(ops::same_shape_as_input)
      .cost(one_flop_per_output)
      .doc(doc)
      // Smooth everywhere: second order too. The large case crosses no blocking (these kernels
      // have none) but runs many values through both kernels: forward only.
      .cases([] {
        return std::vector<OpCase>{
            {.label = "[3,4]", .inputs = {uniform({3, 4}, -4, 4)}, .gradient_order = 2},
            {.label = "large [40,50]", .inputs = {uniform({40, 50}, -20, 20)}, .gradient_order = 0},
        };
      })
      .build();
}

// d sigmoid(x) = sigmoid(x) (1 - sigmoid(x)), from the node's own output.
GradientFn sigmoid_gradient() {
  return [](Graph& g, const Node& n, const std::vector<Output>& dy) -> std::vector<std::optional<Output>> {
    const Output s = g.output(n.id);
    const Output one = ops::scalar(g, 1.0, s.dtype());
    return {ops::mul(g, dy[0], ops::mul(g, s, ops::sub(g, one, s)))};
  };
}

}  // namespace

// d swish(x) = s + x s (1 - s) = s + swish(x) (1 - s), s = sigmoid(x): built from Sigmoid, so
// that the second order comes from Sigmoid's gradient.
GradientFn swish_gradient() {
  return [](Graph& g, const Node& n, const std::vector<Output>& dy) -> std::vector<std::optional<Output>> {
    const Output y = g.output(n.id);
    const Output s = sigmoid(g, n.inputs[0]);
    const Output one = ops::scalar(g, 1.0, y.dtype());
    return {ops::mul(g, dy[0], ops::add(g, s, ops::mul(g, y, ops::sub(g, one, s))))};
  };
}

GradientFn wrong_swish_gradient() {
  return [](Graph& g, const Node& n, const std::vector<Output>& dy) -> std::vector<std::optional<Output>> {
    return {ops::mul(g, dy[0], sigmoid(g, n.inputs[0]))};  // forgets x s (1 - s)
  };
}

void add_ops(OpLibrary& library) {
  library.op(unary_op("Sigmoid", "1 / (1 + exp(-x)) (an op library's op: examples/custom_op)."))
      .op(unary_op("Swish", "x * sigmoid(x) (an op library's op: examples/custom_op)."))
      .kernels("Sigmoid", kCpu, "reference", 0, kDTypes,
               float_kernels([]<class T>() { return reference_kernel<T, false>(); }))
      .kernels("Swish", kCpu, "reference", 0, kDTypes,
               float_kernels([]<class T>() { return reference_kernel<T, true>(); }))
      .kernels("Sigmoid", kCpu, "cpu", 10, kDTypes, float_kernels([]<class T>() { return cpu_kernel<T, false>(); }))
      .kernels("Swish", kCpu, "cpu", 10, kDTypes, float_kernels([]<class T>() { return cpu_kernel<T, true>(); }))
      .gradient("Sigmoid", sigmoid_gradient())
      .gradient("Swish", swish_gradient());
}

Output swish(Graph& g, Output x) { return g.output(g.add_node("Swish", {x}).id); }
Output sigmoid(Graph& g, Output x) { return g.output(g.add_node("Sigmoid", {x}).id); }

}  // namespace swish

// The module's entry points for `dagrad --load-ops libswish_ops.so` and load_op_library.
DAGRAD_OP_LIBRARY(swish::add_ops)
