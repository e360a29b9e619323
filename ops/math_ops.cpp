// Schemas and builders: Add, AddV2, Sub, Mul, Neg, AddN, Sum, Mean.
#include "dagrad/ops/math_ops.hpp"

#include "dagrad/ops/array_ops.hpp"
#include "dagrad/ops/register.hpp"
#include "dagrad/ops/shape_util.hpp"

namespace dagrad::ops {
namespace {

const std::vector<DType> kNumeric = {DType::Half,    DType::BFloat16, DType::Float32,
                                     DType::Float64, DType::Int32,    DType::Int64};

void reduction_shape(ShapeContext& c) {
  const Shape& in = c.input_shape(0);
  const Tensor* axes = c.input_value(1);
  if (axes == nullptr && c.attr<bool>("keep_dims")) {
    // Axes computed at run time (gradients of broadcasting ops): the rank is kept, and only
    // dims that are already 1 are known.
    std::vector<std::int64_t> dims(in.dims());
    for (auto& d : dims) d = d == 1 ? 1 : -1;
    c.set_output(0, Shape(dims));
    return;
  }
  if (axes == nullptr) {
    invalid_argument(c.op_name(),
                     ": 'axis' must be known when the graph is built (a Const node) unless keep_dims is true");
  }
  if (axes->rank() > 1)
    invalid_argument(c.op_name(), ": 'axis' must be a scalar or vector, got shape ", axes->shape().to_string());
  const auto mask = reduction_mask(axes->to_int64_vector(), in.rank());
  const bool keep = c.attr<bool>("keep_dims");
  std::vector<std::int64_t> dims;
  for (int i = 0; i < in.rank(); ++i) {
    if (!mask[static_cast<std::size_t>(i)])
      dims.push_back(in[i]);
    else if (keep)
      dims.push_back(1);
  }
  c.set_output(0, Shape(dims));
}

Output reduce(Graph& g, std::string_view op, Output x, std::vector<std::int64_t> axes, bool keep_dims,
              std::string_view name) {
  const auto n = static_cast<std::int64_t>(axes.size());
  Output axis =
      constant(g, Tensor::from_values<std::int64_t>(Shape{n}, axes), str_cat(name.empty() ? op : name, "/axis"));
  return g.output(g.add_node(op, {x, axis}, {{"keep_dims", keep_dims}}, name).id);
}

}  // namespace

void register_math_ops(OpRegistry& r) {
  const char* binary_docs[][2] = {{"Add", "x + y with broadcasting."},
                                  {"AddV2", "x + y with broadcasting."},
                                  {"Sub", "x - y with broadcasting."},
                                  {"Mul", "x * y with broadcasting."}};
  for (const auto& [op, doc] : binary_docs) {
    r.add(OpDefBuilder(op)
              .input("x", "T")
              .input("y", "T")
              .output("z", "T")
              .attr_type("T", kNumeric)
              .shape_fn(broadcast_binary)
              .cost(one_flop_per_output)
              .doc(doc)
              .build());
  }
  r.add(OpDefBuilder("Neg")
            .input("x", "T")
            .output("y", "T")
            .attr_type("T", kNumeric)
            .shape_fn(same_shape_as_input)
            .cost(one_flop_per_output)
            .doc("-x.")
            .build());
  r.add(OpDefBuilder("Reciprocal")
            .input("x", "T")
            .output("y", "T")
            .attr_type("T", kNumeric)
            .shape_fn(same_shape_as_input)
            .cost(one_flop_per_output)
            .doc("1 / x (integer division for integers, as TF's).")
            .build());
  r.add(OpDefBuilder("AddN")
            .input_list("inputs", "T", "N")
            .output("sum", "T")
            .attr_int("N", std::nullopt, 1)
            .attr_type("T", kNumeric)
            .shape_fn([](ShapeContext& c) { same_shape_inputs(c, "AddN: inputs must have the same shape"); })
            .cost([](const OpCall& call) {
              return static_cast<double>(call.inputs.size() - 1) * one_flop_per_output(call);
            })
            .doc("The element-wise sum of N tensors of one shape.")
            .build());
  for (const char* op : {"Sum", "Mean"}) {
    r.add(OpDefBuilder(op)
              .input("input", "T")
              .input_host("axis", "Tidx")
              .output("output", "T")
              .attr_bool("keep_dims", false)
              .attr_type("T", kNumeric)
              .attr_type("Tidx", {DType::Int32, DType::Int64}, DType::Int32)
              .shape_fn(reduction_shape)
              .cost(one_flop_per_input)
              .doc(std::string(op) == "Sum" ? "Sum over the given axes." : "Mean over the given axes.")
              .build());
  }
}

Output add(Graph& g, Output x, Output y, std::string_view name) {
  return g.output(g.add_node("AddV2", {x, y}, {}, name).id);
}
Output sub(Graph& g, Output x, Output y, std::string_view name) {
  return g.output(g.add_node("Sub", {x, y}, {}, name).id);
}
Output mul(Graph& g, Output x, Output y, std::string_view name) {
  return g.output(g.add_node("Mul", {x, y}, {}, name).id);
}
Output neg(Graph& g, Output x, std::string_view name) { return g.output(g.add_node("Neg", {x}, {}, name).id); }
Output reciprocal(Graph& g, Output x, std::string_view name) {
  return g.output(g.add_node("Reciprocal", {x}, {}, name).id);
}
Output add_n(Graph& g, std::vector<Output> inputs, std::string_view name) {
  return g.output(g.add_node("AddN", std::move(inputs), {}, name).id);
}
Output sum(Graph& g, Output x, std::vector<std::int64_t> axes, bool keep_dims, std::string_view name) {
  return reduce(g, "Sum", x, std::move(axes), keep_dims, name);
}
Output mean(Graph& g, Output x, std::vector<std::int64_t> axes, bool keep_dims, std::string_view name) {
  return reduce(g, "Mean", x, std::move(axes), keep_dims, name);
}
Output reduce_sum_all(Graph& g, Output x, std::string_view name) {
  std::vector<std::int64_t> axes;
  for (int i = 0; i < x.shape().rank(); ++i) axes.push_back(i);
  return sum(g, x, axes, false, name);
}

}  // namespace dagrad::ops
