// Parsing of input SPECs and matching NAME=SPEC arguments to an op's inputs.
#include "dagrad/tools/input_spec.hpp"

#include <charconv>
#include <cmath>

#include "dagrad/core/checked.hpp"
#include "dagrad/core/npy.hpp"
#include "dagrad/tools/command.hpp"
#include "dagrad/tools/option_checks.hpp"

namespace dagrad::cli {
namespace {

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  if (text.empty()) return parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t at = text.find(separator, start);
    parts.push_back(text.substr(start, at - start));
    if (at == std::string_view::npos) return parts;
    start = at + 1;
  }
}

// Every number in a SPEC is read whole: no sign where none fits, no spaces, no trailing text.
template <class T>
T parse_integer(std::string_view text, std::string_view spec, std::string_view what) {
  T value{};
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec == std::errc::result_out_of_range) {
    invalid_argument("bad SPEC ", abbreviated(spec), ": ", what, " ", abbreviated(text), " is out of range");
  }
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
    invalid_argument("bad SPEC ", abbreviated(spec), ": ", what, " ", abbreviated(text), " is not an integer");
  }
  return value;
}

Shape parse_dims(std::string_view text, std::string_view spec) {
  std::vector<std::int64_t> dims;
  for (auto part : split(text, ',')) {
    const auto d = parse_integer<std::int64_t>(part, spec, "dimension");
    if (d < 0) invalid_argument("bad SPEC ", abbreviated(spec), ": dimension ", d, " is negative");
    dims.push_back(d);
  }
  Shape shape(dims);
  try {  // before anything is allocated
    checked_bytes(shape.num_elements(), sizeof(float), "bytes");
  } catch (const Error& e) {
    invalid_argument("bad SPEC ", abbreviated(spec), ": shape ", shape.to_string(), " is too large (", e.what(), ")");
  }
  return shape;
}

// splitmix64: a tiny generator whose output is fixed by the seed on every platform, unlike the
// standard distributions, whose algorithms are left to each library.
std::uint64_t next_random(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

Tensor random_tensor(std::string_view body, std::string_view spec) {
  const auto parts = split(body, ':');
  if (parts.size() > 2) invalid_argument("bad SPEC ", abbreviated(spec), ": expected random:D0,D1,...[:SEED]");
  const Shape shape = parse_dims(parts.empty() ? std::string_view() : parts[0], spec);
  std::uint64_t state = parts.size() == 2 ? parse_integer<std::uint64_t>(parts[1], spec, "seed") : 0;
  Tensor tensor = Tensor::empty(DType::Float32, shape);
  float* data = tensor.data<float>();
  for (std::int64_t i = 0; i < tensor.num_elements(); ++i) {
    // 24 random bits: k / 2^23 - 1 is exact in float32 and lies in [-1, 1 - 2^-23].
    const auto k = static_cast<std::int64_t>(next_random(state) >> 40);
    data[i] = static_cast<float>(static_cast<double>(k) / 8388608.0 - 1.0);
  }
  return tensor;
}

Tensor ints_tensor(std::string_view body, std::string_view spec) {
  std::vector<std::int32_t> values;
  for (auto part : split(body, ',')) values.push_back(parse_integer<std::int32_t>(part, spec, "int32 value"));
  return Tensor::from_values<std::int32_t>(Shape{static_cast<std::int64_t>(values.size())}, values);
}

// A float32 value: nan and inf are allowed, a finite number too large for float32 is not.
Tensor scalar_tensor(std::string_view body, std::string_view spec) {
  double value = 0;
  const auto [end, ec] = std::from_chars(body.data(), body.data() + body.size(), value);
  if (body.empty() || ec == std::errc::invalid_argument || end != body.data() + body.size()) {
    invalid_argument("bad SPEC ", abbreviated(spec), ": ", abbreviated(body), " is not a number");
  }
  constexpr double kFloatOverflow = 0x1.ffffffp127;  // from here on float32 rounds to infinity
  if (ec == std::errc::result_out_of_range || (std::isfinite(value) && std::fabs(value) >= kFloatOverflow)) {
    invalid_argument("bad SPEC ", abbreviated(spec), ": ", abbreviated(body), " is out of the range of float32");
  }
  return Tensor::full(DType::Float32, Shape{}, value);
}

bool starts_with(std::string_view text, std::string_view prefix) { return text.substr(0, prefix.size()) == prefix; }

}  // namespace

Tensor make_input(std::string_view spec) {
  if (starts_with(spec, "random:")) return random_tensor(spec.substr(7), spec);
  if (starts_with(spec, "zeros:")) return Tensor::zeros(DType::Float32, parse_dims(spec.substr(6), spec));
  if (starts_with(spec, "scalar:")) return scalar_tensor(spec.substr(7), spec);
  if (starts_with(spec, "ints:")) return ints_tensor(spec.substr(5), spec);
  if (spec.empty())
    invalid_argument("empty SPEC; expected FILE.npy, random:D0,..., zeros:D0,..., scalar:V or ints:v0,...");
  return read_npy(std::string(spec));
}

std::pair<std::string, std::string> split_name_value(std::string_view text, std::string_view flag) {
  const std::size_t eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0) {
    throw UsageError(str_cat(flag, " expects NAME=VALUE, got ", abbreviated(text)));
  }
  return {std::string(text.substr(0, eq)), std::string(text.substr(eq + 1))};
}

OpInputs op_inputs(const OpDef& def, const std::vector<std::string>& name_specs) {
  std::vector<std::pair<std::string, std::string>> given;
  for (const auto& text : name_specs) given.push_back(split_name_value(text, "--in"));
  std::string names;
  for (std::size_t i = 0; i < def.inputs.size(); ++i) names += (i ? ", " : "") + def.inputs[i].name;
  for (const auto& [name, spec] : given) {
    bool known = false;
    for (const auto& arg : def.inputs) known = known || arg.name == name;
    if (!known) {
      invalid_argument(def.name, ": no input named '", name, "'; ",
                       def.inputs.empty() ? std::string("it takes no inputs") : "its inputs are " + names);
    }
  }
  OpInputs result;
  for (const auto& arg : def.inputs) {
    int count = 0;
    for (const auto& [name, spec] : given) {
      if (name != arg.name) continue;
      if (++count > 1 && arg.number_attr.empty()) {
        invalid_argument(def.name, ": input '", arg.name, "' is given more than once");
      }
      try {
        result.tensors.push_back(make_input(spec));
      } catch (const Error& e) {
        throw Error(e.code(), str_cat(def.name, ": input '", arg.name, "': ", e.what()));
      }
      result.args.push_back(&arg);
    }
    if (count == 0)
      invalid_argument(def.name, ": missing input '", arg.name, "' (give it with --in ", arg.name, "=SPEC)");
  }
  return result;
}

}  // namespace dagrad::cli
