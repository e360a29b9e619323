// Parsing of --attr NAME=VALUE arguments by each attribute's declared kind.
#include "dagrad/tools/attr_args.hpp"

#include "dagrad/tools/command.hpp"
#include "dagrad/tools/input_spec.hpp"

namespace dagrad::cli {

AttrMap parse_attr_args(const OpDef& def, const std::vector<std::string>& name_values) {
  AttrMap attrs;
  for (const auto& text : name_values) {
    auto [name, value] = split_name_value(text, "--attr");
    const AttrDef* attr = def.find_attr(name);
    if (attr == nullptr) {
      std::string names;
      for (std::size_t i = 0; i < def.attrs.size(); ++i) names += (i ? ", " : "") + def.attrs[i].name;
      invalid_argument(def.name, ": unknown attribute '", name, "'; ",
                       def.attrs.empty() ? std::string("it has no attributes") : "its attributes are " + names);
    }
    if (attrs.count(name)) invalid_argument(def.name, ": attribute '", name, "' is given more than once");
    try {
      attrs.emplace(name, parse_attr(attr->kind, value));
    } catch (const Error& e) {
      throw Error(e.code(),
                  str_cat(def.name, ": attribute '", name, "' (", attr_kind_name(attr->kind), "): ", e.what()));
    }
  }
  return attrs;
}

}  // namespace dagrad::cli
