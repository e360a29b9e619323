// Schemas and builders: ApplyGradientDescent, ApplyMomentum, ApplyAdam.
#include "dagrad/ops/training_ops.hpp"

#include "dagrad/core/variables.hpp"
#include "dagrad/ops/register.hpp"

namespace dagrad::ops {
namespace {

const std::vector<DType> kFloats(std::begin(kFloatingDTypes), std::end(kFloatingDTypes));

// Input `i` must have var's shape (TF: "var and delta do not have the same shape[2,3] [3]").
// An uninitialised variable arrives at run time with dtype Invalid; its kernel reports that.
void require_like_var(ShapeContext& c, int i, std::string_view name) {
  if (c.input_dtype(0) == DType::Invalid) return;
  const Shape& var = c.input_shape(0);
  const Shape& other = c.input_shape(i);
  bool ok = var.rank() == other.rank();
  for (int d = 0; ok && d < var.rank(); ++d) ok = var[d] < 0 || other[d] < 0 || var[d] == other[d];
  if (!ok)
    invalid_argument(c.op_name(), ": var and ", name, " do not have the same shape", var.to_string(), " ",
                     other.to_string());
}

void require_scalar(ShapeContext& c, int i, std::string_view name) {
  if (c.input_shape(i).rank() != 0) {
    invalid_argument(c.op_name(), ": ", name, " is not a scalar: ", c.input_shape(i).to_string());
  }
}

// The output is the updated variable; its shape is the variable's (or the gradient's, when the
// variable is not yet initialised at run time: the kernel then fails).
void set_var_output(ShapeContext& c, int grad_index) {
  c.set_output(0, c.input_dtype(0) == DType::Invalid ? c.input_shape(grad_index) : c.input_shape(0));
}

}  // namespace

Tensor& ref_variable(KernelContext& c, int i, int like_input) {
  if (c.variables == nullptr) invalid_argument(c.op_name(), ": variables exist only inside a Session");
  const std::string& name = c.variable_names.at(static_cast<std::size_t>(i));
  Tensor& value = c.variables->get(name);  // "Attempting to use uninitialized value NAME"
  if (value.shape() != c.input(like_input).shape()) {
    invalid_argument(c.op_name(), ": var and grad do not have the same shape", value.shape().to_string(), " ",
                     c.input(like_input).shape().to_string(), " (variable '", name, "')");
  }
  return value;
}

void register_training_ops(OpRegistry& r) {
  r.add(OpDefBuilder("ApplyGradientDescent")
            .input_ref("var", "T")
            .input("alpha", "T")
            .input("delta", "T")
            .output("out", "T")
            .attr_type("T", kFloats)
            .attr_bool("use_locking", false)
            .shape_fn([](ShapeContext& c) {
              require_scalar(c, 1, "alpha");
              require_like_var(c, 2, "delta");
              set_var_output(c, 2);
            })
            .stateful()
            .doc("var -= alpha * delta, in place.")
            .build());
  r.add(OpDefBuilder("ApplyMomentum")
            .input_ref("var", "T")
            .input_ref("accum", "T")
            .input("lr", "T")
            .input("grad", "T")
            .input("momentum", "T")
            .output("out", "T")
            .attr_type("T", kFloats)
            .attr_bool("use_locking", false)
            .attr_bool("use_nesterov", false)
            .shape_fn([](ShapeContext& c) {
              require_like_var(c, 1, "accum");
              require_scalar(c, 2, "lr");
              require_like_var(c, 3, "grad");
              require_scalar(c, 4, "momentum");
              set_var_output(c, 3);
            })
            .stateful()
            .doc("accum = accum * momentum + grad; var -= lr * accum (Nesterov: var -= lr * (grad + momentum * "
                 "accum)), in place.")
            .build());
  r.add(OpDefBuilder("ApplyAdam")
            .input_ref("var", "T")
            .input_ref("m", "T")
            .input_ref("v", "T")
            .input("beta1_power", "T")
            .input("beta2_power", "T")
            .input("lr", "T")
            .input("beta1", "T")
            .input("beta2", "T")
            .input("epsilon", "T")
            .input("grad", "T")
            .output("out", "T")
            .attr_type("T", kFloats)
            .attr_bool("use_locking", false)
            .attr_bool("use_nesterov", false)
            .shape_fn([](ShapeContext& c) {
              require_like_var(c, 1, "m");
              require_like_var(c, 2, "v");
              const char* scalars[] = {"beta1_power", "beta2_power", "lr", "beta1", "beta2", "epsilon"};
              for (int i = 0; i < 6; ++i) require_scalar(c, 3 + i, scalars[i]);
              require_like_var(c, 9, "grad");
              set_var_output(c, 9);
            })
            .stateful()
            .doc("The Adam update of var, m and v in place (beta1_power and beta2_power are beta^t).")
            .build());
}

Output apply_gradient_descent(Graph& g, Output var, Output alpha, Output delta, std::string_view name) {
  return g.output(g.add_node("ApplyGradientDescent", {var, alpha, delta}, {}, name).id);
}

Output apply_momentum(Graph& g, Output var, Output accum, Output lr, Output grad, Output momentum, bool use_nesterov,
                      std::string_view name) {
  return g.output(
      g.add_node("ApplyMomentum", {var, accum, lr, grad, momentum}, {{"use_nesterov", use_nesterov}}, name).id);
}

Output apply_adam(Graph& g, const AdamInputs& in, bool use_nesterov, std::string_view name) {
  return g.output(
      g.add_node("ApplyAdam",
                 {in.var, in.m, in.v, in.beta1_power, in.beta2_power, in.lr, in.beta1, in.beta2, in.epsilon, in.grad},
                 {{"use_nesterov", use_nesterov}}, name)
          .id);
}

}  // namespace dagrad::ops
