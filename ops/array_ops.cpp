// Schemas and builders: Placeholder, Const, Identity, ZerosLike, OnesLike, Cast, NoOp.
#include "dagrad/ops/array_ops.hpp"

#include "dagrad/ops/register.hpp"
#include "dagrad/ops/shape_util.hpp"

namespace dagrad::ops {
namespace {

const std::vector<DType> kAll(std::begin(kAllDTypes), std::end(kAllDTypes));

}  // namespace

void register_array_ops(OpRegistry& r) {
  r.add(OpDefBuilder("Placeholder")
            .output("output", "dtype")
            .attr_type("dtype", kAll)
            .attr_shape("shape")
            .shape_fn([](ShapeContext& c) { c.set_output(0, c.attr<Shape>("shape")); })
            .doc("A value fed at run time; running it unfed is an error.")
            .build());
  r.add(OpDefBuilder("Const")
            .output("output", "dtype")
            .attr_tensor("value")
            .attr_type("dtype", kAll)
            .shape_fn([](ShapeContext& c) {
              const Tensor& value = c.attr<Tensor>("value");
              const DType dtype = c.attr<DType>("dtype");
              if (!value.defined()) invalid_argument("Const: attribute 'value' is an undefined tensor");
              if (value.dtype() != dtype) {
                invalid_argument("Const: attribute 'dtype' is ", dtype_name(dtype), " but 'value' holds ",
                                 dtype_name(value.dtype()));
              }
              c.set_output(0, value.shape());
            })
            .doc("A constant tensor.")
            .build());
  for (const char* op : {"Identity", "ZerosLike", "OnesLike"}) {
    r.add(OpDefBuilder(op)
              .input("x", "T")
              .output("y", "T")
              .attr_type("T", kAll)
              .shape_fn(same_shape_as_input)
              .doc(std::string(op) == "Identity" ? "Returns its input."
                                                 : "A tensor of the input's shape filled with 0 or 1.")
              .build());
  }
  r.add(OpDefBuilder("Cast")
            .input("x", "SrcT")
            .output("y", "DstT")
            .attr_type("SrcT", kAll)
            .attr_type("DstT", kAll)
            .attr_bool("Truncate", false)
            .shape_fn(same_shape_as_input)
            .doc("Converts to DstT: one rounding to floats, truncation toward zero to integers.")
            .build());
  r.add(OpDefBuilder("NoOp")
            .shape_fn([](ShapeContext&) {})
            .doc("Does nothing; used with control inputs to group other nodes.")
            .build());
}

Output placeholder(Graph& g, DType dtype, Shape shape, std::string_view name) {
  return g.output(g.add_node("Placeholder", {}, {{"dtype", dtype}, {"shape", std::move(shape)}}, name).id);
}

Output constant(Graph& g, Tensor value, std::string_view name) {
  if (!value.defined()) invalid_argument("ops::constant: undefined tensor");
  if (!value.device().is_cpu()) value = value.to(Device::cpu());
  const DType dtype = value.dtype();
  return g.output(
      g.add_node("Const", {}, {{"value", std::move(value)}, {"dtype", dtype}}, name.empty() ? "Const" : name).id);
}

Output scalar(Graph& g, double value, DType dtype, std::string_view name) {
  return constant(g, Tensor::full(dtype, Shape{}, value), name);
}

Output identity(Graph& g, Output x, std::string_view name) {
  return g.output(g.add_node("Identity", {x}, {}, name).id);
}
Output zeros_like(Graph& g, Output x, std::string_view name) {
  return g.output(g.add_node("ZerosLike", {x}, {}, name).id);
}
Output ones_like(Graph& g, Output x, std::string_view name) {
  return g.output(g.add_node("OnesLike", {x}, {}, name).id);
}

Output cast(Graph& g, Output x, DType dtype, bool truncate, std::string_view name) {
  return g.output(g.add_node("Cast", {x}, {{"DstT", dtype}, {"Truncate", truncate}}, name).id);
}

const Node& group(Graph& g, const std::vector<const Node*>& deps, std::string_view name) {
  std::vector<int> ids;
  for (const Node* d : deps) ids.push_back(d->id);
  return g.add_node("NoOp", {}, {}, name.empty() ? "group" : name, ids);
}

}  // namespace dagrad::ops
