// Op attributes from the command line: NAME=VALUE parsed by the kind the op's schema declares.
#pragma once

#include <string>
#include <vector>

#include "dagrad/core/op_registry.hpp"

namespace dagrad::cli {

// Each VALUE is parsed by parse_attr for its attribute's kind: int, float, bool, string,
// list(int) as "1,2,3" ("" is the empty list), type names as TF spells them. Throws
// dagrad::Error on unknown or repeated names and bad values (naming op and attribute), and
// UsageError when an argument has no '='.
AttrMap parse_attr_args(const OpDef& def, const std::vector<std::string>& name_values);

}  // namespace dagrad::cli
