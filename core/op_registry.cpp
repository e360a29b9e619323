// Op schemas: the builder, attribute completion and validation, and the op registry.
#include "dagrad/core/op_registry.hpp"

#include <iterator>

#include <algorithm>

#include "dagrad/core/suggest.hpp"

namespace dagrad {

const AttrDef* OpDef::find_attr(std::string_view attr) const {
  for (const auto& a : attrs) {
    if (a.name == attr) return &a;
  }
  return nullptr;
}

DType OpDef::kernel_dtype(const AttrMap& values) const {
  for (const auto& a : attrs) {
    if (a.kind == AttrKind::Type) return get_attr<DType>(values, a.name);
  }
  return DType::Invalid;
}

std::vector<DType> OpDef::kernel_dtypes() const {
  for (const auto& a : attrs) {
    if (a.kind != AttrKind::Type) continue;
    if (!a.allowed_types.empty()) return a.allowed_types;
    return {std::begin(kAllDTypes), std::end(kAllDTypes)};
  }
  return {};
}

double one_flop_per_output(const OpCall& call) { return static_cast<double>(call.outputs.at(0).num_elements()); }
double one_flop_per_input(const OpCall& call) { return static_cast<double>(call.inputs.at(0).num_elements()); }

std::optional<double> OpDef::flops(const OpCall& call) const {
  if (!cost) return std::nullopt;
  return cost(call);
}

std::string OpDef::signature() const {
  auto args = [](const std::vector<ArgDef>& list) {
    std::string text;
    for (std::size_t i = 0; i < list.size(); ++i) {
      const ArgDef& a = list[i];
      text += (i ? ", " : "") + a.name + ": ";
      if (!a.number_attr.empty()) text += a.number_attr + " * ";
      text += a.type_attr.empty() ? std::string(dtype_name(a.fixed_type)) : a.type_attr;
      if (a.is_ref) text += " (ref)";
    }
    return text;
  };
  std::string text = name + "(" + args(inputs) + ") -> (" + args(outputs) + ")";
  for (const auto& a : attrs) {
    text += "\n    " + a.name + ": ";
    if (!a.allowed_types.empty()) {
      text += "{";
      for (std::size_t i = 0; i < a.allowed_types.size(); ++i) {
        text += (i ? ", " : "") + std::string(dtype_name(a.allowed_types[i]));
      }
      text += "}";
    } else if (!a.allowed_strings.empty()) {
      text += "{";
      for (std::size_t i = 0; i < a.allowed_strings.size(); ++i) {
        text += (i ? ", " : "") + ("\"" + a.allowed_strings[i] + "\"");
      }
      text += "}";
    } else {
      text += attr_kind_name(a.kind);
    }
    if (a.minimum) text += " >= " + std::to_string(*a.minimum);
    if (a.default_value) text += " = " + attr_to_string(*a.default_value);
  }
  return text;
}

OpDefBuilder::OpDefBuilder(std::string name) { def_.name = std::move(name); }

OpDefBuilder& OpDefBuilder::input(std::string name, std::string type_attr) {
  def_.inputs.push_back({.name = std::move(name), .type_attr = std::move(type_attr)});
  return *this;
}
OpDefBuilder& OpDefBuilder::input_fixed(std::string name, DType dtype) {
  def_.inputs.push_back({.name = std::move(name), .fixed_type = dtype});
  return *this;
}
OpDefBuilder& OpDefBuilder::input_list(std::string name, std::string type_attr, std::string number_attr) {
  def_.inputs.push_back(
      {.name = std::move(name), .type_attr = std::move(type_attr), .number_attr = std::move(number_attr)});
  return *this;
}
OpDefBuilder& OpDefBuilder::output_list(std::string name, std::string type_attr, std::string number_attr) {
  def_.outputs.push_back(
      {.name = std::move(name), .type_attr = std::move(type_attr), .number_attr = std::move(number_attr)});
  return *this;
}
OpDefBuilder& OpDefBuilder::input_host(std::string name, std::string type_attr) {
  def_.inputs.push_back({.name = std::move(name), .type_attr = std::move(type_attr), .host_memory = true});
  return *this;
}
OpDefBuilder& OpDefBuilder::input_ref(std::string name, std::string type_attr) {
  def_.inputs.push_back({.name = std::move(name), .type_attr = std::move(type_attr), .is_ref = true});
  return *this;
}
OpDefBuilder& OpDefBuilder::input_list_ref(std::string name, std::string type_attr, std::string number_attr) {
  def_.inputs.push_back({.name = std::move(name),
                         .type_attr = std::move(type_attr),
                         .number_attr = std::move(number_attr),
                         .is_ref = true});
  return *this;
}
OpDefBuilder& OpDefBuilder::output(std::string name, std::string type_attr) {
  def_.outputs.push_back({.name = std::move(name), .type_attr = std::move(type_attr)});
  return *this;
}
OpDefBuilder& OpDefBuilder::output_ref(std::string name, std::string type_attr) {
  def_.outputs.push_back({.name = std::move(name), .type_attr = std::move(type_attr), .is_ref = true});
  return *this;
}
OpDefBuilder& OpDefBuilder::output_fixed(std::string name, DType dtype) {
  def_.outputs.push_back({.name = std::move(name), .fixed_type = dtype});
  return *this;
}
OpDefBuilder& OpDefBuilder::attr(AttrDef def) {
  def_.attrs.push_back(std::move(def));
  return *this;
}
OpDefBuilder& OpDefBuilder::attr_type(std::string name, std::vector<DType> allowed, std::optional<DType> dflt) {
  AttrDef def{.name = std::move(name), .kind = AttrKind::Type, .allowed_types = std::move(allowed)};
  if (dflt) def.default_value = *dflt;
  return attr(std::move(def));
}
OpDefBuilder& OpDefBuilder::attr_int(std::string name, std::optional<std::int64_t> dflt,
                                     std::optional<std::int64_t> minimum) {
  AttrDef def{.name = std::move(name), .kind = AttrKind::Int, .minimum = minimum};
  if (dflt) def.default_value = *dflt;
  return attr(std::move(def));
}
OpDefBuilder& OpDefBuilder::attr_float(std::string name, std::optional<double> dflt) {
  AttrDef def{.name = std::move(name), .kind = AttrKind::Float};
  if (dflt) def.default_value = *dflt;
  return attr(std::move(def));
}
OpDefBuilder& OpDefBuilder::attr_bool(std::string name, std::optional<bool> dflt) {
  AttrDef def{.name = std::move(name), .kind = AttrKind::Bool};
  if (dflt) def.default_value = *dflt;
  return attr(std::move(def));
}
OpDefBuilder& OpDefBuilder::attr_string(std::string name, std::vector<std::string> allowed,
                                        std::optional<std::string> dflt) {
  AttrDef def{.name = std::move(name), .kind = AttrKind::String, .allowed_strings = std::move(allowed)};
  if (dflt) def.default_value = *dflt;
  return attr(std::move(def));
}
OpDefBuilder& OpDefBuilder::attr_list_int(std::string name, std::optional<std::vector<std::int64_t>> dflt) {
  AttrDef def{.name = std::move(name), .kind = AttrKind::ListInt};
  if (dflt) def.default_value = *dflt;
  return attr(std::move(def));
}
OpDefBuilder& OpDefBuilder::attr_list_float(std::string name, std::optional<std::vector<double>> dflt) {
  AttrDef def{.name = std::move(name), .kind = AttrKind::ListFloat};
  if (dflt) def.default_value = *dflt;
  return attr(std::move(def));
}
OpDefBuilder& OpDefBuilder::attr_shape(std::string name, std::optional<Shape> dflt) {
  AttrDef def{.name = std::move(name), .kind = AttrKind::Shape};
  if (dflt) def.default_value = *dflt;
  return attr(std::move(def));
}
OpDefBuilder& OpDefBuilder::attr_tensor(std::string name) {
  return attr({.name = std::move(name), .kind = AttrKind::Tensor});
}
OpDefBuilder& OpDefBuilder::shape_fn(ShapeFn fn) {
  def_.shape_fn = std::move(fn);
  return *this;
}
OpDefBuilder& OpDefBuilder::doc(std::string text) {
  def_.doc = std::move(text);
  return *this;
}
OpDefBuilder& OpDefBuilder::stateful() {
  def_.stateful = true;
  return *this;
}
OpDefBuilder& OpDefBuilder::start_early() {
  def_.start_early = true;
  return *this;
}
OpDefBuilder& OpDefBuilder::cost(OpCostFn fn) {
  def_.cost = std::move(fn);
  return *this;
}
OpDefBuilder& OpDefBuilder::cases(OpCasesFn fn) {
  def_.cases = std::move(fn);
  return *this;
}
OpDefBuilder& OpDefBuilder::no_cases(std::string reason) {
  def_.no_cases_reason = std::move(reason);
  return *this;
}
OpDef OpDefBuilder::build() {
  if (!def_.shape_fn) fail(Code::Internal, "op ", def_.name, " has no shape function");
  return std::move(def_);
}

ShapeContext::ShapeContext(const OpDef& def, const AttrMap& attrs, std::vector<DType> input_dtypes,
                           std::vector<Shape> input_shapes, std::vector<const Tensor*> input_values)
    : def_(&def),
      attrs_(&attrs),
      input_dtypes_(std::move(input_dtypes)),
      input_shapes_(std::move(input_shapes)),
      input_values_(std::move(input_values)),
      outputs_(flat_output_args(def, attrs).size()) {
  input_values_.resize(input_shapes_.size(), nullptr);
}

void ShapeContext::require_rank(int i, int rank) const {
  const Shape& shape = input_shape(i);
  if (shape.rank() != rank) {
    const auto args = flat_input_args(*def_, *attrs_);
    invalid_argument(op_name(), ": input '", args.at(static_cast<std::size_t>(i))->name, "' must be rank ", rank,
                     ", got shape ", shape.to_string());
  }
}

void ShapeContext::set_output(int i, Shape shape) {
  if (shape.rank() > Shape::kMaxRank) {
    invalid_argument(op_name(), ": output ", i, " would have ", shape.rank(), " dimensions; a shape has at most ",
                     Shape::kMaxRank);
  }
  outputs_.at(static_cast<std::size_t>(i)) = std::move(shape);
}

void OpRegistry::add(OpDef def) {
  if (ops_.count(def.name)) fail(Code::Internal, "op ", def.name, " registered twice");
  std::string name = def.name;
  ops_.emplace(std::move(name), std::move(def));
}

const OpDef* OpRegistry::find(std::string_view name) const {
  auto it = ops_.find(name);
  return it == ops_.end() ? nullptr : &it->second;
}

const OpDef& OpRegistry::get(std::string_view name) const {
  const OpDef* def = find(name);
  if (def == nullptr) {
    std::vector<std::string> names;
    for (const auto& entry : ops_) names.push_back(entry.first);
    fail(Code::NotFound, "Op type not registered '", name, "'", did_you_mean(closest_names(name, names)));
  }
  return *def;
}

void OpRegistry::set_cases(std::string_view name, OpCasesFn fn) {
  get(name);  // NotFound for an unknown op
  ops_.find(name)->second.cases = std::move(fn);
}

void OpRegistry::set_no_cases(std::string_view name, std::string reason) {
  get(name);
  ops_.find(name)->second.no_cases_reason = std::move(reason);
}

std::vector<const OpDef*> OpRegistry::list() const {
  std::vector<const OpDef*> defs;
  for (const auto& [name, def] : ops_) defs.push_back(&def);
  return defs;
}

namespace {

std::string allowed_list(const AttrDef& def) {
  std::string text;
  for (std::size_t i = 0; i < def.allowed_types.size(); ++i) {
    text += (i ? ", " : "") + std::string(dtype_name(def.allowed_types[i]));
  }
  for (std::size_t i = 0; i < def.allowed_strings.size(); ++i) {
    text += (i ? ", " : "") + ("\"" + def.allowed_strings[i] + "\"");
  }
  return text;
}

// Accepts an int where a float is declared, and an int list where a float list is.
void coerce_kind(const OpDef& op, const AttrDef& def, AttrValue& value) {
  const AttrKind given = attr_kind(value);
  if (given == def.kind) return;
  if (def.kind == AttrKind::Float && given == AttrKind::Int) {
    value = static_cast<double>(std::get<std::int64_t>(value));
    return;
  }
  if (def.kind == AttrKind::ListFloat && given == AttrKind::ListInt) {
    const auto& ints = std::get<std::vector<std::int64_t>>(value);
    value = std::vector<double>(ints.begin(), ints.end());
    return;
  }
  invalid_argument(op.name, ": attribute '", def.name, "' must be of type ", attr_kind_name(def.kind), ", got ",
                   attr_kind_name(given), " ", attr_to_string(value));
}

void check_allowed(const OpDef& op, const AttrDef& def, const AttrValue& value) {
  if (def.kind == AttrKind::Type && !def.allowed_types.empty()) {
    const DType t = std::get<DType>(value);
    if (std::find(def.allowed_types.begin(), def.allowed_types.end(), t) == def.allowed_types.end()) {
      invalid_argument(op.name, ": Value for attr '", def.name, "' of ", dtype_name(t),
                       " is not in the list of allowed values: ", allowed_list(def));
    }
  }
  if (def.kind == AttrKind::String && !def.allowed_strings.empty()) {
    const auto& s = std::get<std::string>(value);
    if (std::find(def.allowed_strings.begin(), def.allowed_strings.end(), s) == def.allowed_strings.end()) {
      invalid_argument(op.name, ": Value for attr '", def.name, "' of \"", s,
                       "\" is not in the list of allowed values: ", allowed_list(def));
    }
  }
  if (def.kind == AttrKind::Int && def.minimum && std::get<std::int64_t>(value) < *def.minimum) {
    invalid_argument(op.name, ": Value for attr '", def.name, "' of ", std::get<std::int64_t>(value),
                     " must be at least minimum ", *def.minimum);
  }
}

}  // namespace

std::vector<const ArgDef*> flat_input_args(const OpDef& def, const AttrMap& attrs) {
  std::vector<const ArgDef*> flat;
  for (const auto& arg : def.inputs) {
    std::int64_t count = 1;
    if (!arg.number_attr.empty()) count = get_attr<std::int64_t>(attrs, arg.number_attr);
    for (std::int64_t i = 0; i < count; ++i) flat.push_back(&arg);
  }
  return flat;
}

std::vector<const ArgDef*> flat_output_args(const OpDef& def, const AttrMap& attrs) {
  std::vector<const ArgDef*> flat;
  for (const auto& arg : def.outputs) {
    std::int64_t count = 1;
    if (!arg.number_attr.empty()) {
      count = get_attr<std::int64_t>(attrs, arg.number_attr);
      if (count < 0 || count > kMaxListOutputs) {
        invalid_argument(def.name, ": attribute '", arg.number_attr, "' asks for ", count, " outputs '", arg.name,
                         "'; a list has 0 to ", kMaxListOutputs);
      }
    }
    flat.insert(flat.end(), static_cast<std::size_t>(count), &arg);
  }
  return flat;
}

std::vector<DType> complete_attrs(const OpDef& def, AttrMap& attrs, const std::vector<DType>& input_dtypes) {
  for (const auto& [name, value] : attrs) {
    if (def.find_attr(name) == nullptr) invalid_argument(def.name, ": unknown attribute '", name, "'");
  }
  // Input count; the list arguments (one, or several counted by the same attribute) share
  // equally what the fixed arguments leave.
  const ArgDef* list_arg = nullptr;
  std::size_t fixed_count = 0, lists = 0;
  for (const auto& arg : def.inputs) {
    if (arg.number_attr.empty()) {
      ++fixed_count;
      continue;
    }
    if (list_arg != nullptr && list_arg->number_attr != arg.number_attr)
      fail(Code::Internal, def.name, ": its input lists are counted by different attributes");
    list_arg = &arg;
    ++lists;
  }
  const std::size_t given = input_dtypes.size();
  if (list_arg == nullptr ? given != fixed_count : given < fixed_count) {
    std::string names;
    for (std::size_t i = 0; i < def.inputs.size(); ++i) names += (i ? ", " : "") + def.inputs[i].name;
    invalid_argument(def.name, ": expected ", list_arg ? "at least " : "", fixed_count, " inputs (", names, "), got ",
                     given);
  }
  if (list_arg != nullptr) {
    if ((given - fixed_count) % lists != 0) {
      invalid_argument(def.name, ": ", given - fixed_count, " inputs do not divide among its ", lists,
                       " input lists of '", list_arg->number_attr, "' each");
    }
    const auto n = static_cast<std::int64_t>((given - fixed_count) / lists);
    auto it = attrs.find(list_arg->number_attr);
    if (it != attrs.end() && std::get_if<std::int64_t>(&it->second) && std::get<std::int64_t>(it->second) != n) {
      invalid_argument(def.name, ": attribute '", list_arg->number_attr, "' is ", attr_to_string(it->second), " but ",
                       n, " inputs were given for '", list_arg->name, "'");
    }
    attrs[list_arg->number_attr] = n;
  }
  // Bind type attributes from the inputs.
  std::map<std::string, std::string, std::less<>> bound_by;  // type attr -> input that set it
  const auto flat = flat_input_args(def, attrs);
  for (std::size_t i = 0; i < flat.size(); ++i) {
    const ArgDef& arg = *flat[i];
    const DType dtype = input_dtypes[i];
    if (arg.type_attr.empty()) {
      if (dtype != arg.fixed_type) {
        invalid_argument("Input '", arg.name, "' of '", def.name, "' Op has type ", dtype_name(dtype),
                         " that does not match expected type of ", dtype_name(arg.fixed_type), ".");
      }
      continue;
    }
    auto it = attrs.find(arg.type_attr);
    if (it == attrs.end()) {
      attrs[arg.type_attr] = dtype;
      bound_by[arg.type_attr] = arg.name;
      continue;
    }
    const DType* expected = std::get_if<DType>(&it->second);
    if (expected != nullptr && *expected != dtype) {
      auto by = bound_by.find(arg.type_attr);
      if (by != bound_by.end()) {
        invalid_argument("Input '", arg.name, "' of '", def.name, "' Op has type ", dtype_name(dtype),
                         " that does not match type ", dtype_name(*expected), " of argument '", by->second, "'.");
      }
      invalid_argument("Input '", arg.name, "' of '", def.name, "' Op has type ", dtype_name(dtype),
                       " that does not match attribute ", arg.type_attr, "=", dtype_name(*expected), ".");
    }
  }
  // Defaults, kinds and allowed values.
  for (const auto& a : def.attrs) {
    auto it = attrs.find(a.name);
    if (it == attrs.end()) {
      if (!a.default_value) invalid_argument(def.name, ": missing required attribute '", a.name, "'");
      it = attrs.emplace(a.name, *a.default_value).first;
    }
    coerce_kind(def, a, it->second);
    check_allowed(def, a, it->second);
  }
  std::vector<DType> out;
  for (const ArgDef* arg : flat_output_args(def, attrs)) {
    out.push_back(arg->type_attr.empty() ? arg->fixed_type : get_attr<DType>(attrs, arg->type_attr));
  }
  return out;
}

std::vector<Shape> infer_shapes(const OpDef& def, const AttrMap& attrs, const std::vector<DType>& dtypes,
                                const std::vector<Shape>& shapes, const std::vector<const Tensor*>& values) {
  ShapeContext context(def, attrs, dtypes, shapes, values);
  try {
    def.shape_fn(context);
  } catch (const Error& e) {
    // Every shape error names its op; TF's wordings ("Invalid reduction dimension ...") leave
    // that to the node context, which a raw op call has not.
    if (std::string_view(e.what()).starts_with(def.name)) throw;
    throw Error(e.code(), str_cat(def.name, ": ", e.what()));
  }
  return context.output_shapes();
}

}  // namespace dagrad
