// Schemas and builders: ArgMax and Equal.
#include "dagrad/ops/compare_ops.hpp"

#include <limits>

#include "dagrad/ops/array_ops.hpp"
#include "dagrad/ops/register.hpp"
#include "dagrad/ops/shape_util.hpp"

namespace dagrad::ops {
namespace {

void arg_max_shape(ShapeContext& c) {
  const Shape& in = c.input_shape(0);
  if (c.input_shape(1).rank() != 0) {
    invalid_argument("ArgMax: dimension must be a scalar, got shape ", c.input_shape(1).to_string());
  }
  if (in.rank() < 1) invalid_argument("ArgMax: input must be at least rank 1, got shape ", in.to_string());
  const Tensor* value = c.input_value(1);
  if (value == nullptr) {
    c.set_output(0, Shape(std::vector<std::int64_t>(static_cast<std::size_t>(in.rank() - 1), -1)));
    return;
  }
  const std::int64_t axis = value->to_int64_vector().front();
  if (axis < -in.rank() || axis >= in.rank()) {
    invalid_argument("ArgMax: Expected dimension in the range [", -in.rank(), ", ", in.rank(), "), but got ", axis);
  }
  const int a = static_cast<int>(axis < 0 ? axis + in.rank() : axis);
  if (in[a] == 0) invalid_argument("ArgMax: Reduction axis ", a, " is empty in shape ", in.to_string());
  // An int32 index cannot name every position of a longer axis: refuse rather than wrap.
  if (c.attr<DType>("output_type") == DType::Int32 && in[a] > std::numeric_limits<std::int32_t>::max()) {
    invalid_argument("ArgMax: output_type int32 cannot index axis ", a, " of size ", in[a], " in shape ",
                     in.to_string(), "; use output_type int64");
  }
  std::vector<std::int64_t> dims;
  for (int i = 0; i < in.rank(); ++i) {
    if (i != a) dims.push_back(in[i]);
  }
  c.set_output(0, Shape(dims));
}

}  // namespace

void register_compare_ops(OpRegistry& r) {
  const std::vector<DType> numeric = {DType::Half,    DType::BFloat16, DType::Float32,
                                      DType::Float64, DType::Int32,    DType::Int64};
  const std::vector<DType> all(std::begin(kAllDTypes), std::end(kAllDTypes));
  r.add(OpDefBuilder("ArgMax")
            .input("input", "T")
            .input_host("dimension", "Tidx")
            .output("output", "output_type")
            .attr_type("T", numeric)
            .attr_type("Tidx", {DType::Int32, DType::Int64}, DType::Int32)
            .attr_type("output_type", {DType::Int32, DType::Int64}, DType::Int64)
            .shape_fn(arg_max_shape)
            .doc("The index of the largest value along an axis (the first on ties).")
            .build());
  r.add(OpDefBuilder("Equal")
            .input("x", "T")
            .input("y", "T")
            .output_fixed("z", DType::Bool)
            .attr_type("T", all)
            .attr_bool("incompatible_shape_error", true)
            .shape_fn(broadcast_binary)
            .doc("x == y element-wise, with broadcasting.")
            .build());
}

Output arg_max(Graph& g, Output input, std::int64_t axis, DType output_type, std::string_view name) {
  Output dim = constant(g, Tensor::scalar<std::int32_t>(static_cast<std::int32_t>(axis)),
                        str_cat(name.empty() ? "ArgMax" : name, "/dimension"));
  return g.output(g.add_node("ArgMax", {input, dim}, {{"output_type", output_type}}, name).id);
}

Output equal(Graph& g, Output x, Output y, std::string_view name) {
  return g.output(g.add_node("Equal", {x, y}, {}, name).id);
}

}  // namespace dagrad::ops
