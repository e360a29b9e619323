// The saved graph format's JSON values: floats bit for bit (non-finite ones as their bits),
// int64 exactly, tensors as base64 of their little-endian bytes, attributes tagged with their kind.
#include "dagrad/core/graph_json.hpp"

#include <bit>
#include <cmath>
#include <cstdio>

#include "dagrad/core/base64.hpp"
#include "dagrad/core/checked.hpp"
#include "dagrad/core/json_int64.hpp"

namespace dagrad::graph_json {
namespace {

static_assert(std::endian::native == std::endian::little, "tensor data is saved as the host's little-endian bytes");

// The deepest value of the format: root -> "nodes" -> node -> "attrs" -> attribute -> tensor ->
// "shape" -> dimension. Deeper values are dropped while parsing, so a hostile file cannot build
// a deep tree; what remains then fails the type checks.
constexpr int kMaxDepth = 7;

constexpr AttrKind kAttrKinds[] = {AttrKind::Int,    AttrKind::Float,   AttrKind::Bool,
                                   AttrKind::String, AttrKind::Type,    AttrKind::Shape,
                                   AttrKind::Tensor, AttrKind::ListInt, AttrKind::ListFloat};

}  // namespace

// JSON text of a value for messages, cut short: a hostile file's values can be huge.
std::string shown(const json& v) {
  std::string text = v.dump(-1, ' ', true, json::error_handler_t::replace);
  return text.size() > 80 ? text.substr(0, 77) + "..." : text;
}

json parse_json(std::string_view text, const std::string& source) {
  // Each value costs its bytes many times over in memory: a file of small numbers could ask for
  // gigabytes, so the count is bounded too (Const values are one string each, whatever their size).
  std::int64_t values = 0;
  const json::parser_callback_t shallow = [&](int depth, json::parse_event_t event, json&) {
    if (event == json::parse_event_t::value || event == json::parse_event_t::object_start ||
        event == json::parse_event_t::array_start) {
      if (++values > kMaxJsonValues) {
        fail(Code::ResourceExhausted, "graph '", source, "' holds more than ", kMaxJsonValues, " JSON values");
      }
    }
    return depth <= kMaxDepth;
  };
  try {
    return json::parse(text, shallow);
  } catch (const json::exception& e) {
    invalid_argument("graph '", source, "' is not valid JSON: ", e.what());
  }
}

// ---- scalars --------------------------------------------------------------------------------

namespace {

std::int64_t int_value(const json& v, const Where& where) {
  const auto value = json_as_int64(v);
  if (!value) where.fail("expected an integer in int64's range, got ", shown(v));
  return *value;
}

}  // namespace

namespace {

// Floats: a JSON number when finite (written with the digits that read back the same bits,
// -0.0 included); infinities and NaNs, which JSON lacks, as the string "0x" + the 16 hex digits
// of their IEEE-754 bits, so that every NaN payload survives.
json float_to_json(double value) {
  if (std::isfinite(value)) return value;
  char bits[24];
  std::snprintf(bits, sizeof bits, "0x%016llx", static_cast<unsigned long long>(std::bit_cast<std::uint64_t>(value)));
  return bits;
}

}  // namespace

namespace {

double float_value(const json& v, const Where& where) {
  if (v.is_number_float()) {
    const double value = v.get<double>();
    if (!std::isfinite(value)) where.fail("number ", shown(v), " is out of double's range");
    return value;
  }
  if (v.is_number_integer()) {  // hand-written "1": exact only up to 2^53
    const auto i = json_as_int64(v);
    if (!i || *i > (std::int64_t{1} << 53) || *i < -(std::int64_t{1} << 53)) {
      where.fail("integer ", shown(v), " is not exactly a double; write it as a float");
    }
    return static_cast<double>(*i);
  }
  if (v.is_string()) {
    const std::string& text = v.get_ref<const std::string&>();
    std::uint64_t bits = 0;
    bool ok = text.size() == 18 && text.compare(0, 2, "0x") == 0;
    for (std::size_t i = 2; ok && i < text.size(); ++i) {
      const char c = text[i];
      const int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
      ok = digit >= 0;
      bits = bits << 4 | static_cast<std::uint64_t>(digit);
    }
    const double value = std::bit_cast<double>(bits);
    if (ok && !std::isfinite(value)) return value;
    where.fail("a float given as a string must be \"0x\" and 16 lower-case hex digits of an infinity or NaN, got ",
               shown(v));
  }
  where.fail("expected a number, got ", shown(v));
}

}  // namespace

DType dtype_value(const json& v, const Where& where) {
  if (!v.is_string()) where.fail("expected a dtype name, got ", shown(v));
  try {
    return parse_dtype(v.get_ref<const std::string&>());
  } catch (const Error&) {
    where.fail("unknown dtype ", shown(v));
  }
}

Shape shape_value(const json& v, const Where& where) {
  if (!v.is_array()) where.fail("expected a shape (an array of dimensions), got ", shown(v));
  if (v.size() > static_cast<std::size_t>(Shape::kMaxRank)) where.fail("rank ", v.size(), " exceeds ", Shape::kMaxRank);
  std::vector<std::int64_t> dims;
  for (const json& d : v) {
    const auto dim = json_as_int64(d);
    if (!dim || *dim < -1) where.fail("dimension ", dims.size(), " is ", shown(d), "; expected -1 (unknown) or >= 0");
    dims.push_back(*dim);
  }
  return Shape(std::move(dims));
}

json shape_to_json(const Shape& shape) { return shape.dims(); }

// ---- tensors --------------------------------------------------------------------------------

namespace {

// {"dtype": "half", "shape": [2, 3], "data": base64 of the little-endian bytes, row-major}.
json tensor_to_json(const Tensor& value) {
  const Tensor host = value.device().is_cpu() ? value : value.to(Device::cpu());
  return {{"dtype", std::string(dtype_name(host.dtype()))},
          {"shape", shape_to_json(host.shape())},
          {"data", base64_encode(host.raw_data(), host.nbytes())}};
}

}  // namespace

const json& field(const json& object, const char* key, const Where& where) {
  const auto it = object.find(key);
  if (it == object.end()) where.fail("has no field \"", key, "\"");
  return *it;
}

void only_fields(const json& object, std::initializer_list<std::string_view> known, const Where& where) {
  for (const auto& [key, value] : object.items()) {
    bool ok = false;
    for (std::string_view k : known) ok = ok || key == k;
    if (!ok) where.fail("unknown field \"", key, "\"");
  }
}

namespace {

Tensor tensor_value(const json& v, const Where& where) {
  if (!v.is_object()) where.fail("expected a tensor object {dtype, shape, data}, got ", shown(v));
  only_fields(v, {"dtype", "shape", "data"}, where);
  const DType dtype = dtype_value(field(v, "dtype", where), where / "dtype");
  const Shape shape = shape_value(field(v, "shape", where), where / "shape");
  if (!shape.is_fully_defined()) where.fail("a tensor's shape must be fully defined, got ", shape.to_string());
  const json& data = field(v, "data", where);
  if (!data.is_string()) where.fail("field \"data\" must be a base64 string");
  // The byte count is checked before anything is allocated: a hostile shape fails here, and
  // base64_decode refuses text of any other length before writing a byte.
  std::size_t bytes = 0;
  try {
    bytes = checked_bytes(shape.num_elements(), dtype_size(dtype), "graph tensor bytes");
  } catch (const Error& e) {
    where.fail(e.what());
  }
  const std::string& text = data.get_ref<const std::string&>();
  if (text.size() != base64_length(bytes)) {
    where.fail("data holds ", text.size(), " base64 characters; ", dtype_name(dtype), " ", shape.to_string(), " needs ",
               base64_length(bytes), " (", bytes, " bytes)");
  }
  Tensor value = Tensor::empty(dtype, shape);
  base64_decode(text, value.raw_data(), bytes, str_cat("graph '", where.source, "': ", where.path, " data"));
  if (dtype == DType::Bool) {
    const auto* b = static_cast<const unsigned char*>(value.raw_data());
    for (std::size_t i = 0; i < bytes; ++i) {
      if (b[i] > 1) where.fail("bool element ", i, " has byte ", int{b[i]}, "; expected 0 or 1");
    }
  }
  return value;
}

}  // namespace

// ---- attributes -----------------------------------------------------------------------------

// An attribute is {"KIND": value} with TF's kind names, so that loading never guesses a kind.
json attr_to_json(const AttrValue& value) {
  json v;
  switch (attr_kind(value)) {
    case AttrKind::Int:
      v = std::get<std::int64_t>(value);
      break;
    case AttrKind::Float:
      v = float_to_json(std::get<double>(value));
      break;
    case AttrKind::Bool:
      v = std::get<bool>(value);
      break;
    case AttrKind::String:
      v = std::get<std::string>(value);
      break;
    case AttrKind::Type:
      v = std::string(dtype_name(std::get<DType>(value)));
      break;
    case AttrKind::Shape:
      v = shape_to_json(std::get<Shape>(value));
      break;
    case AttrKind::Tensor:
      v = tensor_to_json(std::get<Tensor>(value));
      break;
    case AttrKind::ListInt:
      v = std::get<std::vector<std::int64_t>>(value);
      break;
    case AttrKind::ListFloat:
      v = json::array();
      for (double f : std::get<std::vector<double>>(value)) v.push_back(float_to_json(f));
      break;
  }
  return {{std::string(attr_kind_name(attr_kind(value))), std::move(v)}};
}

AttrValue attr_value(const json& attr, const Where& where) {
  if (!attr.is_object() || attr.size() != 1) {
    where.fail("expected an object with one key, the attribute's kind (e.g. {\"int\": 3}), got ", shown(attr));
  }
  const std::string& kind_name = attr.begin().key();
  const json& v = attr.begin().value();
  const Where at = where / kind_name;
  for (AttrKind kind : kAttrKinds) {
    if (attr_kind_name(kind) != kind_name) continue;
    switch (kind) {
      case AttrKind::Int:
        return int_value(v, at);
      case AttrKind::Float:
        return float_value(v, at);
      case AttrKind::Bool:
        if (!v.is_boolean()) at.fail("expected true or false, got ", shown(v));
        return v.get<bool>();
      case AttrKind::String:
        if (!v.is_string()) at.fail("expected a string, got ", shown(v));
        return v.get<std::string>();
      case AttrKind::Type:
        return dtype_value(v, at);
      case AttrKind::Shape:
        return shape_value(v, at);
      case AttrKind::Tensor:
        return tensor_value(v, at);
      case AttrKind::ListInt:
      case AttrKind::ListFloat: {
        if (!v.is_array()) at.fail("expected an array, got ", shown(v));
        std::vector<std::int64_t> ints;
        std::vector<double> floats;
        for (std::size_t i = 0; i < v.size(); ++i) {
          if (kind == AttrKind::ListInt) ints.push_back(int_value(v[i], at / str_cat("element ", i)));
          if (kind == AttrKind::ListFloat) floats.push_back(float_value(v[i], at / str_cat("element ", i)));
        }
        if (kind == AttrKind::ListInt) return ints;
        return floats;
      }
    }
  }
  where.fail("unknown attribute kind \"", kind_name,
             "\"; expected int, float, bool, string, type, shape, tensor, list(int) or list(float)");
}

}  // namespace dagrad::graph_json
