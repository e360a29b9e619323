// Schemas and builders: Shape, Reshape, BroadcastTo, BroadcastGradientArgs (what gradients of
// broadcasting and reducing ops are made of).
#include "dagrad/ops/shape_ops.hpp"

#include <algorithm>

#include "dagrad/ops/array_ops.hpp"
#include "dagrad/ops/register.hpp"

namespace dagrad::ops {
namespace {

const std::vector<DType> kAll(std::begin(kAllDTypes), std::end(kAllDTypes));
const std::vector<DType> kIndex = {DType::Int32, DType::Int64};

// The values as given: Shape::to_string would print a negative one as "?".
std::string dims_string(const std::vector<std::int64_t>& dims) {
  std::string text = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) text += (i ? "," : "") + std::to_string(dims[i]);
  return text + "]";
}

// A shape-like input: its values when known, after checking it is a vector.
const Tensor* vector_input(ShapeContext& c, int i, std::string_view what) {
  const Shape& s = c.input_shape(i);
  if (s.rank() != 1) invalid_argument(c.op_name(), ": ", what, " must be 1-D, not ", s.to_string());
  return c.input_value(i);
}

// The length of a shape-like vector input that has no known value: the rank of the result.
std::int64_t known_length(ShapeContext& c, int i, std::string_view what) {
  const std::int64_t n = c.input_shape(i)[0];
  if (n < 0) {
    invalid_argument(c.op_name(), ": the length of ", what,
                     " must be known when the graph is built (the result's rank depends on it)");
  }
  // Checked before the result's dims are allocated: a few bytes of graph could ask for a huge rank.
  if (n > Shape::kMaxRank) {
    invalid_argument(c.op_name(), ": ", what, " has ", n, " elements, but a shape has at most ", Shape::kMaxRank,
                     " dimensions");
  }
  return n;
}

void reshape_shape(ShapeContext& c) {
  const Tensor* value = vector_input(c, 1, "sizes input");
  if (value == nullptr) {
    c.set_output(0, Shape(std::vector<std::int64_t>(static_cast<std::size_t>(known_length(c, 1, "'shape'")), -1)));
    return;
  }
  const Shape& in = c.input_shape(0);
  const std::int64_t n = in.is_fully_defined() ? in.num_elements() : -1;
  c.set_output(0, resolve_reshape(value->to_int64_vector(), n));
}

void broadcast_to_shape(ShapeContext& c) {
  const Tensor* value = vector_input(c, 1, "shape");
  const Shape& in = c.input_shape(0);
  if (value == nullptr) {
    const std::int64_t n = known_length(c, 1, "'shape'");
    if (in.rank() > n) {
      invalid_argument("Rank of input (", in.rank(), ") must be no greater than rank of output shape (", n, ").");
    }
    // Dims of the input other than 1 are the result's dims; the rest are known only at run time.
    std::vector<std::int64_t> dims(static_cast<std::size_t>(n), -1);
    for (int i = 0; i < in.rank(); ++i) {
      if (in[i] != 1) dims[static_cast<std::size_t>(n - in.rank() + i)] = in[i];
    }
    c.set_output(0, Shape(dims));
    return;
  }
  const auto target = value->to_int64_vector();
  const auto n = static_cast<int>(target.size());
  for (std::int64_t d : target) {
    if (d < 0) invalid_argument("BroadcastTo: shape ", dims_string(target), " has a negative dimension");
  }
  if (in.rank() > n) {
    invalid_argument("Rank of input (", in.rank(), ") must be no greater than rank of output shape (", n, ").");
  }
  for (int i = 0; i < in.rank(); ++i) {
    const std::int64_t d = in[i], t = target[static_cast<std::size_t>(n - in.rank() + i)];
    if (d >= 0 && d != 1 && d != t) {
      invalid_argument("BroadcastTo: Unable to broadcast tensor of shape ", in.to_string(), " to tensor of shape ",
                       dims_string(target));
    }
  }
  c.set_output(0, Shape(target));
}

void broadcast_gradient_args_shape(ShapeContext& c) {
  const Tensor* s0 = vector_input(c, 0, "s0");
  const Tensor* s1 = vector_input(c, 1, "s1");
  if (s0 == nullptr || s1 == nullptr) {
    c.set_output(0, Shape{-1});
    c.set_output(1, Shape{-1});
    return;
  }
  const auto [r0, r1] = broadcast_reduction_axes(s0->to_int64_vector(), s1->to_int64_vector());
  c.set_output(0, Shape{static_cast<std::int64_t>(r0.size())});
  c.set_output(1, Shape{static_cast<std::int64_t>(r1.size())});
}

Output int64_vector(Graph& g, const std::vector<std::int64_t>& values, std::string_view name) {
  return constant(g, Tensor::from_values<std::int64_t>(Shape{static_cast<std::int64_t>(values.size())}, values), name);
}

}  // namespace

std::pair<std::vector<std::int64_t>, std::vector<std::int64_t>> broadcast_reduction_axes(
    const std::vector<std::int64_t>& s0, const std::vector<std::int64_t>& s1) {
  const std::size_t rank = std::max(s0.size(), s1.size());
  std::vector<std::int64_t> r0, r1;
  for (std::size_t i = 0; i < rank; ++i) {
    // Dims aligned from the right; missing leading dims count as 1.
    const std::int64_t a = i + s0.size() >= rank ? s0[i + s0.size() - rank] : 1;
    const std::int64_t b = i + s1.size() >= rank ? s1[i + s1.size() - rank] : 1;
    if (a < 0 || b < 0 || (a != b && a != 1 && b != 1)) {
      invalid_argument("Incompatible shapes: ", dims_string(s0), " vs. ", dims_string(s1));
    }
    // An axis where both are 1 is listed for both (summing over a size-1 axis is harmless).
    if (a == 1) r0.push_back(static_cast<std::int64_t>(i));
    if (b == 1) r1.push_back(static_cast<std::int64_t>(i));
  }
  return {r0, r1};
}

Shape resolve_reshape(const std::vector<std::int64_t>& dims, std::int64_t num_elements) {
  std::int64_t product = 1;
  int unknown = -1;
  for (std::size_t d = 0; d < dims.size(); ++d) {
    const std::int64_t size = dims[d];
    if (size == -1) {
      if (unknown != -1) invalid_argument("Only one input size may be -1, not both ", unknown, " and ", d);
      unknown = static_cast<int>(d);
    } else if (size < 0) {
      invalid_argument("Size ", d, " must be non-negative, not ", size);
    } else {
      product = checked_mul(product, size);
    }
  }
  std::vector<std::int64_t> out = dims;
  if (num_elements < 0) return Shape(out);
  if (unknown != -1) {
    if (product == 0) {
      invalid_argument(
          "Reshape cannot infer the missing input size for an empty tensor unless all specified "
          "input sizes are non-zero");
    }
    const std::int64_t missing = num_elements / product;
    if (missing * product != num_elements) {
      invalid_argument("Input to reshape is a tensor with ", num_elements,
                       " values, but the requested shape requires a multiple of ", product);
    }
    out[static_cast<std::size_t>(unknown)] = missing;
  } else if (product != num_elements) {
    invalid_argument("Input to reshape is a tensor with ", num_elements, " values, but the requested shape has ",
                     product);
  }
  return Shape(out);
}

void register_shape_ops(OpRegistry& r) {
  r.add(OpDefBuilder("Shape")
            .input("input", "T")
            .output("output", "out_type")
            .attr_type("T", kAll)
            .attr_type("out_type", kIndex, DType::Int32)
            .shape_fn([](ShapeContext& c) { c.set_output(0, Shape{c.input_shape(0).rank()}); })
            .doc("The shape of a tensor as a 1-D integer tensor.")
            .build());
  r.add(OpDefBuilder("Reshape")
            .input("tensor", "T")
            .input_host("shape", "Tshape")
            .output("output", "T")
            .attr_type("T", kAll)
            .attr_type("Tshape", kIndex, DType::Int32)
            .shape_fn(reshape_shape)
            .doc("The same values in a new shape; one dim of `shape` may be -1 and is inferred.")
            .build());
  r.add(OpDefBuilder("BroadcastTo")
            .input("input", "T")
            .input_host("shape", "Tidx")
            .output("output", "T")
            .attr_type("T", kAll)
            .attr_type("Tidx", kIndex, DType::Int32)
            .shape_fn(broadcast_to_shape)
            .doc("Broadcasts input to `shape` with numpy's rules.")
            .build());
  r.add(OpDefBuilder("BroadcastGradientArgs")
            .input_host("s0", "T")
            .input_host("s1", "T")
            .output("r0", "T")
            .output("r1", "T")
            .attr_type("T", kIndex, DType::Int32)
            .shape_fn(broadcast_gradient_args_shape)
            .doc("The axes to sum the gradients of two broadcast operands over.")
            .build());
}

Output shape(Graph& g, Output x, DType out_type, std::string_view name) {
  return g.output(g.add_node("Shape", {x}, {{"out_type", out_type}}, name).id);
}

Output shape_tensor(Graph& g, Output x, std::string_view name) {
  if (x.shape().is_fully_defined()) return int64_vector(g, x.shape().dims(), name.empty() ? "Shape" : name);
  return shape(g, x, DType::Int64, name);
}

Output reshape(Graph& g, Output x, Output shape, std::string_view name) {
  return g.output(g.add_node("Reshape", {x, shape}, {}, name).id);
}

Output reshape(Graph& g, Output x, std::vector<std::int64_t> dims, std::string_view name) {
  Output s = int64_vector(g, dims, str_cat(name.empty() ? "Reshape" : name, "/shape"));
  return reshape(g, x, s, name);
}

Output reshape(Graph& g, Output x, std::initializer_list<std::int64_t> dims, std::string_view name) {
  return reshape(g, x, std::vector<std::int64_t>(dims), name);
}

Output broadcast_to(Graph& g, Output x, std::initializer_list<std::int64_t> dims, std::string_view name) {
  return broadcast_to(g, x, std::vector<std::int64_t>(dims), name);
}

Output broadcast_to(Graph& g, Output x, Output shape, std::string_view name) {
  return g.output(g.add_node("BroadcastTo", {x, shape}, {}, name).id);
}

Output broadcast_to(Graph& g, Output x, std::vector<std::int64_t> dims, std::string_view name) {
  Output s = int64_vector(g, dims, str_cat(name.empty() ? "BroadcastTo" : name, "/shape"));
  return broadcast_to(g, x, s, name);
}

std::pair<Output, Output> broadcast_gradient_args(Graph& g, Output s0, Output s1, std::string_view name) {
  const Node& n = g.add_node("BroadcastGradientArgs", {s0, s1}, {}, name);
  return {g.output(n.id, 0), g.output(n.id, 1)};
}

}  // namespace dagrad::ops
