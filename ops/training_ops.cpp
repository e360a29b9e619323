// Schemas and builders: ApplyGradientDescent, ApplyMomentum, ApplyAdam, and the internal
// _GroupedApplyAdam (sessions put it in the place of runs of ApplyAdam nodes: ops/fusions.cpp).
#include "dagrad/ops/training_ops.hpp"

#include "dagrad/core/variables.hpp"
#include "dagrad/ops/register.hpp"
#include "dagrad/ops/training_updates.hpp"

namespace dagrad::ops {
namespace {

const std::vector<DType> kFloats(std::begin(kFloatingDTypes), std::end(kFloatingDTypes));

// Input `i` must have the shape of the var at input `var_index` (TF: "var and delta do not have
// the same shape[2,3] [3]"). An uninitialised variable arrives at run time with dtype Invalid; its
// kernel reports that.
void require_like_var(ShapeContext& c, int i, std::string_view name, int var_index = 0) {
  if (c.input_dtype(var_index) == DType::Invalid) return;
  const Shape& var = c.input_shape(var_index);
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
void set_var_output(ShapeContext& c, int grad_index, int var_index = 0) {
  c.set_output(0, c.input_dtype(var_index) == DType::Invalid ? c.input_shape(grad_index) : c.input_shape(var_index));
}

constexpr const char* kAdamScalars[] = {"beta1_power", "beta2_power", "lr", "beta1", "beta2", "epsilon"};

// ApplyAdam's schema less its shape function and doc; `grouped` (_GroupedApplyAdam): var, m, v
// and grad as lists of N.
OpDefBuilder adam_schema(std::string name, bool grouped) {
  OpDefBuilder b(std::move(name));
  for (const char* slot : {"var", "m", "v"}) grouped ? b.input_list_ref(slot, "T", "N") : b.input_ref(slot, "T");
  for (const char* scalar : kAdamScalars) b.input(scalar, "T");
  grouped ? b.input_list("grad", "T", "N") : b.input("grad", "T");
  b.output("out", "T").attr_type("T", kFloats);
  if (grouped) b.attr_int("N", std::nullopt, 1);
  b.attr_bool("use_locking", false).attr_bool("use_nesterov", false).stateful();
  return b;
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

AdamCoefficients adam_coefficients(KernelContext& c, const AdamLayout& in) {
  const auto scalar = [&](int i) { return c.input(in.scalar(i)).value_as_double(0); };
  return {scalar(2), scalar(0), scalar(1), scalar(3), scalar(4), scalar(5), c.attr<bool>("use_nesterov")};
}

void require_separate_updates(const KernelContext& c, const AdamLayout& in) {
  if (c.variables == nullptr) return;  // ref_variable reports it
  const auto name = [&](int update, int slot) -> const std::string& {
    const int ref = slot == 0 ? in.var(update) : slot == 1 ? in.m(update) : in.v(update);
    return c.variable_names.at(static_cast<std::size_t>(ref));
  };
  for (int a = 0; a < in.n; ++a)
    for (int b = a + 1; b < in.n; ++b)
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j)
          if (name(a, i) == name(b, j))
            invalid_argument(c.op_name(), ": variable '", name(a, i), "' is updated by both update ", a, " and ", b,
                             " of the group");
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
  r.add(adam_schema("ApplyAdam", false)
            .shape_fn([](ShapeContext& c) {
              const AdamLayout in{1};
              require_like_var(c, in.m(0), "m");
              require_like_var(c, in.v(0), "v");
              for (int i = 0; i < 6; ++i) require_scalar(c, in.scalar(i), kAdamScalars[i]);
              require_like_var(c, in.grad(0), "grad");
              set_var_output(c, in.grad(0));
            })
            .doc("The Adam update of var, m and v in place (beta1_power and beta2_power are beta^t).")
            .build());
  r.add(adam_schema("_GroupedApplyAdam", true)
            .shape_fn([](ShapeContext& c) {
              const AdamLayout in{static_cast<int>(c.attr<std::int64_t>("N"))};
              for (int k = 0; k < in.n; ++k) {
                require_like_var(c, in.m(k), "m", in.var(k));
                require_like_var(c, in.v(k), "v", in.var(k));
                require_like_var(c, in.grad(k), "grad", in.var(k));
              }
              for (int i = 0; i < 6; ++i) require_scalar(c, in.scalar(i), kAdamScalars[i]);
              set_var_output(c, in.grad(in.n - 1), in.var(in.n - 1));
            })
            .doc("ApplyAdam on each of N variables (var[k], m[k], v[k], grad[k]) with the same scalars, in "
                 "one pass, with the bits of the N ApplyAdam nodes it stands for; out is the last var. Sessions "
                 "put it in the place of runs of such nodes.")
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
