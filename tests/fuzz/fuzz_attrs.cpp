// Fuzzes attribute parsing and validation: text --attr arguments parsed by an op's schema
// (cli::parse_attr_args, parse_attr), then completed and checked against the schema and the op's
// shape function, as a graph node of that op would be.
//
// Input: text lines. Line 1 names the op (an unknown name picks one by its hash); "@D0,D1,..."
// lines give the input shapes in order ("?" or -1 for unknown dims; missing inputs are scalars);
// every other line is an attribute argument NAME=VALUE as the CLI takes it.
#include <algorithm>

#include <dagrad/dagrad.hpp>
#include <dagrad/tools/attr_args.hpp>
#include <dagrad/tools/command.hpp>

#include "fuzz_support.hpp"

using namespace dagrad;

namespace {

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

const OpDef& pick_op(const std::string& name) {
  if (const OpDef* def = op_registry().find(name)) return *def;
  const auto ops = op_registry().list();
  return *ops[std::hash<std::string>()(name) % ops.size()];
}

// What parse_attr accepts prints back to text that parses to the same value (for the kinds whose
// printed form is exact).
void check_round_trip(const AttrDef& def, const AttrValue& value) {
  const AttrKind kind = attr_kind(value);
  if (kind != AttrKind::Int && kind != AttrKind::ListInt && kind != AttrKind::Bool && kind != AttrKind::Type &&
      kind != AttrKind::Shape) {
    return;
  }
  const std::string text = attr_to_string(value);
  AttrValue again;
  if (!fuzz::accepted([&] { again = parse_attr(kind, text); })) {
    fuzz::finding("parse_attr refuses the printed form '" + text + "' of attribute " + def.name);
  }
  const bool same = kind == AttrKind::Shape  ? std::get<Shape>(again) == std::get<Shape>(value)
                    : kind == AttrKind::Int  ? std::get<std::int64_t>(again) == std::get<std::int64_t>(value)
                    : kind == AttrKind::Bool ? std::get<bool>(again) == std::get<bool>(value)
                    : kind == AttrKind::Type
                        ? std::get<DType>(again) == std::get<DType>(value)
                        : std::get<std::vector<std::int64_t>>(again) == std::get<std::vector<std::int64_t>>(value);
  if (!same) fuzz::finding("attribute " + def.name + " does not survive printing as '" + text + "'");
}

// The dtype of each input: its type attribute's value when given, else the first allowed type.
std::vector<DType> input_dtypes(const OpDef& def, const AttrMap& attrs, std::size_t count) {
  std::vector<DType> dtypes;
  for (const ArgDef* arg : flat_input_args(def, attrs)) {
    if (dtypes.size() == count) break;
    if (arg->type_attr.empty()) {
      dtypes.push_back(arg->fixed_type);
      continue;
    }
    auto it = attrs.find(arg->type_attr);
    const DType* given = it == attrs.end() ? nullptr : std::get_if<DType>(&it->second);
    const AttrDef* type = def.find_attr(arg->type_attr);
    dtypes.push_back(given                                             ? *given
                     : type != nullptr && !type->allowed_types.empty() ? type->allowed_types.front()
                                                                       : DType::Float32);
  }
  return dtypes;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto lines = split_lines(fuzz::as_string(data, size));
  const OpDef& def = pick_op(lines.front());
  std::vector<std::string> attr_args;
  std::vector<Shape> shapes;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    if (lines[i].empty() || lines[i].front() != '@') {
      attr_args.push_back(lines[i]);
      continue;
    }
    AttrValue dims;
    if (!fuzz::accepted([&] { dims = parse_attr(AttrKind::Shape, lines[i].substr(1)); })) return 0;
    shapes.push_back(std::get<Shape>(dims));
  }
  AttrMap attrs;
  try {
    attrs = cli::parse_attr_args(def, attr_args);
  } catch (const cli::UsageError&) {
    return 0;  // "NAME" without "=VALUE": the CLI's usage error (exit status 2)
  } catch (const Error& e) {
    if (e.code() == Code::Internal) fuzz::finding(std::string("Internal error on user input: ") + e.what());
    return 0;
  }
  for (const auto& [name, value] : attrs) check_round_trip(*def.find_attr(name), value);

  // Validation as Graph::add_node does it: complete the attributes, then run the shape function.
  // A list argument (AddN's inputs) takes whatever the fixed arguments leave, so N follows the shapes.
  std::size_t fixed = 0;
  bool has_list = false;
  for (const auto& arg : def.inputs) {
    if (arg.number_attr.empty())
      ++fixed;
    else
      has_list = true;
  }
  const std::size_t count = has_list ? std::max(fixed, shapes.size()) : fixed;
  shapes.resize(count);
  AttrMap probe = attrs;
  if (has_list) {
    for (const auto& arg : def.inputs) {
      if (!arg.number_attr.empty()) probe[arg.number_attr] = static_cast<std::int64_t>(count - fixed);
    }
  }
  fuzz::accepted([&] {
    const auto dtypes = input_dtypes(def, probe, count);
    AttrMap completed = attrs;
    complete_attrs(def, completed, dtypes);
    infer_shapes(def, completed, dtypes, shapes, std::vector<const Tensor*>(count, nullptr));
  });
  return 0;
}
