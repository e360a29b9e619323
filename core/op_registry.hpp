// Op schemas (inputs, outputs, typed attributes with allowed values and defaults, shape
// function, doc) and the registry that maps op names to them.
#pragma once

#include <functional>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dagrad/core/attr.hpp"
#include "dagrad/core/op_case.hpp"

namespace dagrad {

class ShapeContext;
using ShapeFn = std::function<void(ShapeContext&)>;

// One call of an op as its cost function sees it: the completed attributes and the shapes.
struct OpCall {
  const AttrMap& attrs;
  const std::vector<Shape>& inputs;
  const std::vector<Shape>& outputs;
};
// The floating-point operations of one call (a multiply-add counts two): GFLOP/s in bench-op
// and in profiles.
using OpCostFn = std::function<double(const OpCall&)>;
// The common costs: one operation per element of the first output (element-wise ops), or of the
// first input (reductions).
double one_flop_per_output(const OpCall& call);
double one_flop_per_input(const OpCall& call);

struct ArgDef {
  std::string name;
  std::string type_attr;              // dtype comes from this type attribute ...
  DType fixed_type = DType::Invalid;  // ... or is fixed
  std::string number_attr;            // non-empty: a list of that many tensors (AddN's N)
  bool host_memory = false;           // the kernel reads it on the host (shape-like inputs)
  bool is_ref = false;                // a variable: read or written in place, may be uninitialised
};

struct AttrDef {
  std::string name;
  AttrKind kind = AttrKind::Int;
  std::optional<AttrValue> default_value;  // absent: required
  std::vector<std::string> allowed_strings;
  std::vector<DType> allowed_types;
  std::optional<std::int64_t> minimum;
};

struct OpDef {
  std::string name;
  std::vector<ArgDef> inputs;
  std::vector<ArgDef> outputs;
  std::vector<AttrDef> attrs;
  ShapeFn shape_fn;
  std::string doc;
  bool stateful = false;  // has side effects: never pruned, never constant-folded
  // The executor runs it as soon as its inputs are ready, not in node order: an op whose kernel
  // starts work that completes later (KernelContext::defer), a collective overlapping the nodes
  // after it.
  bool start_early = false;
  // Sample calls for the checks (`dagrad check`, the case-table tests), or why there are none
  // (graph-only ops such as Placeholder); a registered op has exactly one of the two.
  OpCasesFn cases;
  std::string no_cases_reason;
  OpCostFn cost;  // empty: the op's cost is not modelled

  const AttrDef* find_attr(std::string_view attr) const;
  // The dtype kernels of this op are registered under: the value of its first type attribute.
  DType kernel_dtype(const AttrMap& attrs) const;
  // The dtypes that attribute allows (every dtype where it allows any); empty without one.
  std::vector<DType> kernel_dtypes() const;
  std::string signature() const;  // "Conv2D(input: T, filter: T) -> (output: T); T in {...}; ..."
  // The cost of one call, when the op models it.
  std::optional<double> flops(const OpCall& call) const;
};

class OpDefBuilder {
 public:
  explicit OpDefBuilder(std::string name);
  OpDefBuilder& input(std::string name, std::string type_attr);
  OpDefBuilder& input_fixed(std::string name, DType dtype);
  OpDefBuilder& input_list(std::string name, std::string type_attr, std::string number_attr);
  OpDefBuilder& input_host(std::string name, std::string type_attr);  // read on the host
  OpDefBuilder& input_ref(std::string name, std::string type_attr);
  OpDefBuilder& input_list_ref(std::string name, std::string type_attr, std::string number_attr);
  OpDefBuilder& output(std::string name, std::string type_attr);
  // A list of outputs, as many as the int attribute `number_attr` says (at most kMaxListOutputs).
  OpDefBuilder& output_list(std::string name, std::string type_attr, std::string number_attr);
  OpDefBuilder& output_fixed(std::string name, DType dtype);
  OpDefBuilder& output_ref(std::string name, std::string type_attr);
  OpDefBuilder& attr_type(std::string name, std::vector<DType> allowed,
                          std::optional<DType> default_value = std::nullopt);
  OpDefBuilder& attr_int(std::string name, std::optional<std::int64_t> default_value = std::nullopt,
                         std::optional<std::int64_t> minimum = std::nullopt);
  OpDefBuilder& attr_float(std::string name, std::optional<double> default_value = std::nullopt);
  OpDefBuilder& attr_bool(std::string name, std::optional<bool> default_value = std::nullopt);
  OpDefBuilder& attr_string(std::string name, std::vector<std::string> allowed = {},
                            std::optional<std::string> default_value = std::nullopt);
  OpDefBuilder& attr_list_int(std::string name, std::optional<std::vector<std::int64_t>> default_value = std::nullopt);
  OpDefBuilder& attr_list_float(std::string name, std::optional<std::vector<double>> default_value = std::nullopt);
  OpDefBuilder& attr_shape(std::string name, std::optional<Shape> default_value = std::nullopt);
  OpDefBuilder& attr_tensor(std::string name);
  OpDefBuilder& shape_fn(ShapeFn fn);
  OpDefBuilder& doc(std::string text);
  OpDefBuilder& stateful();
  OpDefBuilder& start_early();
  OpDefBuilder& cases(OpCasesFn fn);
  OpDefBuilder& no_cases(std::string reason);
  OpDefBuilder& cost(OpCostFn fn);
  OpDef build();

 private:
  OpDefBuilder& attr(AttrDef def);
  OpDef def_;
};

// What a shape function sees: dtypes, shapes (-1 for dims unknown before run time), constant
// values where known, and the completed attributes. It validates and sets output shapes.
class ShapeContext {
 public:
  ShapeContext(const OpDef& def, const AttrMap& attrs, std::vector<DType> input_dtypes, std::vector<Shape> input_shapes,
               std::vector<const Tensor*> input_values);

  const OpDef& op() const { return *def_; }
  const std::string& op_name() const { return def_->name; }
  const AttrMap& attrs() const { return *attrs_; }
  template <class T>
  const T& attr(std::string_view name) const {
    return get_attr<T>(*attrs_, name);
  }

  int num_inputs() const { return static_cast<int>(input_shapes_.size()); }
  const Shape& input_shape(int i) const { return input_shapes_.at(static_cast<std::size_t>(i)); }
  DType input_dtype(int i) const { return input_dtypes_.at(static_cast<std::size_t>(i)); }
  // The input's value when known (a Const at graph time; every host input at run time), else null.
  const Tensor* input_value(int i) const { return input_values_.at(static_cast<std::size_t>(i)); }
  // Throws "<op>: input 'name' must have rank r, got shape [..]".
  void require_rank(int i, int rank) const;

  void set_output(int i, Shape shape);
  const std::vector<Shape>& output_shapes() const { return outputs_; }

 private:
  const OpDef* def_;
  const AttrMap* attrs_;
  std::vector<DType> input_dtypes_;
  std::vector<Shape> input_shapes_;
  std::vector<const Tensor*> input_values_;
  std::vector<Shape> outputs_;
};

class OpRegistry {
 public:
  void add(OpDef def);
  // Throws NotFound "Op type not registered 'X'".
  const OpDef& get(std::string_view name) const;
  const OpDef* find(std::string_view name) const;
  std::vector<const OpDef*> list() const;  // sorted by name
  // Attaches cases to a registered op (the library's live in ops/cases/, apart from the schemas);
  // throws NotFound for an unknown op.
  void set_cases(std::string_view name, OpCasesFn fn);
  void set_no_cases(std::string_view name, std::string reason);

 private:
  std::map<std::string, OpDef, std::less<>> ops_;
};

// The process-wide op registry, filled on first use by dagrad's register_all().
OpRegistry& op_registry();

// Completes `attrs` against the schema: binds type attributes from the input dtypes (checking
// that inputs sharing a type agree), sets list lengths, fills defaults, rejects unknown,
// missing, mistyped and disallowed values. Returns the output dtypes.
std::vector<DType> complete_attrs(const OpDef& def, AttrMap& attrs, const std::vector<DType>& input_dtypes);

// Runs the op's shape function; returns the output shapes.
std::vector<Shape> infer_shapes(const OpDef& def, const AttrMap& attrs, const std::vector<DType>& dtypes,
                                const std::vector<Shape>& shapes, const std::vector<const Tensor*>& values);

// Expands a schema's inputs to the flat list actually passed (list arguments repeated N times).
std::vector<const ArgDef*> flat_input_args(const OpDef& def, const AttrMap& attrs);

// The most outputs one list argument may have: its count is an attribute, which a graph file or
// a caller may set to anything.
inline constexpr std::int64_t kMaxListOutputs = 1 << 16;

// Expands a schema's outputs to the flat list a node has (list arguments repeated as their
// number attribute says); `attrs` complete. InvalidArgument naming the op and attribute when a
// count is outside [0, kMaxListOutputs].
std::vector<const ArgDef*> flat_output_args(const OpDef& def, const AttrMap& attrs);

}  // namespace dagrad
