// Schemas and builders: MatMul and Transpose.
#include "dagrad/ops/matrix_ops.hpp"

#include <algorithm>

#include "dagrad/ops/array_ops.hpp"
#include "dagrad/ops/register.hpp"

namespace dagrad::ops {
namespace {

const std::vector<DType> kFloats(std::begin(kFloatingDTypes), std::end(kFloatingDTypes));

void mat_mul_shape(ShapeContext& c) {
  for (int i = 0; i < 2; ++i) {
    if (c.input_shape(i).rank() != 2) {
      invalid_argument("MatMul: In[", i, "] is not a matrix. Instead it has shape ", c.input_shape(i).to_string());
    }
  }
  const Shape& a = c.input_shape(0);
  const Shape& b = c.input_shape(1);
  const bool ta = c.attr<bool>("transpose_a"), tb = c.attr<bool>("transpose_b");
  const std::int64_t inner_a = ta ? a[0] : a[1], inner_b = tb ? b[1] : b[0];
  if (inner_a >= 0 && inner_b >= 0 && inner_a != inner_b) {
    invalid_argument("MatMul: Matrix size-incompatible: In[0]: ", a.to_string(), ", In[1]: ", b.to_string(),
                     ta || tb ? str_cat(" (transpose_a=", ta, ", transpose_b=", tb, ")") : std::string());
  }
  c.set_output(0, Shape{ta ? a[1] : a[0], tb ? b[0] : b[1]});
}

void transpose_shape(ShapeContext& c) {
  const Shape& x = c.input_shape(0);
  const Shape& perm_shape = c.input_shape(1);
  if (perm_shape.rank() != 1) invalid_argument("Transpose: perm must be a vector, got shape ", perm_shape.to_string());
  if (perm_shape[0] >= 0 && perm_shape[0] != x.rank()) {
    invalid_argument("Transpose: transpose expects a vector of size ", x.rank(), ". But input(1) is a vector of size ",
                     perm_shape[0]);
  }
  const Tensor* value = c.input_value(1);
  if (value == nullptr) {
    c.set_output(0, Shape(std::vector<std::int64_t>(static_cast<std::size_t>(x.rank()), -1)));
    return;
  }
  const auto perm = value->to_int64_vector();
  std::vector<bool> seen(perm.size(), false);
  std::vector<std::int64_t> dims;
  for (std::size_t i = 0; i < perm.size(); ++i) {
    const std::int64_t p = perm[i];
    if (p < 0 || p >= x.rank())
      invalid_argument("Transpose: perm[", i, "] = ", p, " is out of range [0, ", x.rank(), ")");
    if (seen[static_cast<std::size_t>(p)])
      invalid_argument("Transpose: perm has ", p, " more than once: ", Shape(perm).to_string());
    seen[static_cast<std::size_t>(p)] = true;
    dims.push_back(x[static_cast<int>(p)]);
  }
  c.set_output(0, Shape(dims));
}

}  // namespace

void register_matrix_ops(OpRegistry& r) {
  r.add(OpDefBuilder("MatMul")
            .input("a", "T")
            .input("b", "T")
            .output("product", "T")
            .attr_bool("transpose_a", false)
            .attr_bool("transpose_b", false)
            .attr_type("T", kFloats)
            .shape_fn(mat_mul_shape)
            .cost([](const OpCall& call) {  // 2 m n k
              const Shape& a = call.inputs.at(0);
              const std::int64_t k = get_attr<bool>(call.attrs, "transpose_a") ? a[0] : a[1];
              return 2.0 * static_cast<double>(k) * one_flop_per_output(call);
            })
            .doc("The matrix product of a and b, either transposed first if asked.")
            .build());
  const std::vector<DType> all(std::begin(kAllDTypes), std::end(kAllDTypes));
  r.add(OpDefBuilder("Transpose")
            .input("x", "T")
            .input_host("perm", "Tperm")
            .output("y", "T")
            .attr_type("T", all)
            .attr_type("Tperm", {DType::Int32, DType::Int64}, DType::Int32)
            .shape_fn(transpose_shape)
            .doc("Permutes the dimensions: y.shape[i] = x.shape[perm[i]].")
            .build());
}

Output mat_mul(Graph& g, Output a, Output b, bool transpose_a, bool transpose_b, std::string_view name) {
  return g.output(g.add_node("MatMul", {a, b}, {{"transpose_a", transpose_a}, {"transpose_b", transpose_b}}, name).id);
}

Output transpose(Graph& g, Output x, std::vector<std::int64_t> perm, std::string_view name) {
  const auto n = static_cast<std::int64_t>(perm.size());
  std::vector<std::int32_t> values(perm.begin(), perm.end());
  Output p = constant(g, Tensor::from_values<std::int32_t>(Shape{n}, values),
                      str_cat(name.empty() ? "Transpose" : name, "/perm"));
  return transpose(g, x, p, name);
}

Output transpose(Graph& g, Output x, Output perm, std::string_view name) {
  return g.output(g.add_node("Transpose", {x, perm}, {}, name).id);
}

}  // namespace dagrad::ops
