// Printing and parsing of attribute values.
#include "dagrad/core/attr.hpp"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>

namespace dagrad {
namespace {

template <class T>
std::string join(const std::vector<T>& values) {
  std::string text = "[";
  for (std::size_t i = 0; i < values.size(); ++i) text += (i ? ", " : "") + str_cat(values[i]);
  return text + "]";
}

std::vector<std::string_view> split_commas(std::string_view text) {
  std::vector<std::string_view> parts;
  if (text.empty()) return parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    parts.push_back(text.substr(start, comma - start));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return parts;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '[' || s.front() == '(')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == ']' || s.back() == ')')) s.remove_suffix(1);
  return s;
}

std::int64_t parse_int(std::string_view text) {
  text = trim(text);
  std::int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec == std::errc::result_out_of_range) {
    fail(Code::OutOfRange, "integer '", text, "' is out of range for int64 [", INT64_MIN, ", ", INT64_MAX, "]");
  }
  if (ec != std::errc() || end != text.data() + text.size()) {
    invalid_argument("expected an integer, got '", text, "'");
  }
  return value;
}

double parse_float(std::string_view text) {
  text = trim(text);
  const std::string owned(text);
  char* end = nullptr;
  errno = 0;
  const double value = std::strtod(owned.c_str(), &end);
  if (owned.empty() || end != owned.c_str() + owned.size()) invalid_argument("expected a number, got '", text, "'");
  // strtod turns "1e999" into infinity (ERANGE); only "inf" itself may mean infinity.
  if (errno == ERANGE && std::isinf(value)) fail(Code::OutOfRange, "number '", text, "' is out of range for a double");
  return value;
}

// TF's rule for partial shapes: -1 (written ? or -1) is an unknown dimension, anything below is wrong.
std::int64_t parse_dim(std::string_view text) {
  if (text == "?") return Shape::kUnknown;
  const std::int64_t dim = parse_int(text);
  if (dim < Shape::kUnknown) invalid_argument("Dimension ", dim, " must be >= -1");
  return dim;
}

}  // namespace

std::string_view attr_kind_name(AttrKind kind) {
  switch (kind) {
    case AttrKind::Int:
      return "int";
    case AttrKind::Float:
      return "float";
    case AttrKind::Bool:
      return "bool";
    case AttrKind::String:
      return "string";
    case AttrKind::Type:
      return "type";
    case AttrKind::Shape:
      return "shape";
    case AttrKind::Tensor:
      return "tensor";
    case AttrKind::ListInt:
      return "list(int)";
    case AttrKind::ListFloat:
      return "list(float)";
  }
  return "unknown";
}

std::string attr_to_string(const AttrValue& value) {
  switch (attr_kind(value)) {
    case AttrKind::Int:
      return std::to_string(std::get<std::int64_t>(value));
    case AttrKind::Float:
      return str_cat(std::get<double>(value));
    case AttrKind::Bool:
      return std::get<bool>(value) ? "true" : "false";
    case AttrKind::String:
      return "\"" + std::get<std::string>(value) + "\"";
    case AttrKind::Type:
      return std::string(dtype_name(std::get<DType>(value)));
    case AttrKind::Shape:
      return std::get<Shape>(value).to_string();
    case AttrKind::Tensor:
      return std::get<Tensor>(value).to_string(8);
    case AttrKind::ListInt:
      return join(std::get<std::vector<std::int64_t>>(value));
    case AttrKind::ListFloat:
      return join(std::get<std::vector<double>>(value));
  }
  return "?";
}

AttrValue parse_attr(AttrKind kind, std::string_view text) {
  switch (kind) {
    case AttrKind::Int:
      return parse_int(text);
    case AttrKind::Float:
      return parse_float(text);
    case AttrKind::Bool:
      if (text == "true" || text == "True" || text == "1") return true;
      if (text == "false" || text == "False" || text == "0") return false;
      invalid_argument("expected true or false, got '", text, "'");
    case AttrKind::String:
      return std::string(text);
    case AttrKind::Type:
      return parse_dtype(text);
    case AttrKind::Shape: {
      std::vector<std::int64_t> dims;
      for (auto part : split_commas(trim(text))) dims.push_back(parse_dim(trim(part)));
      return Shape(dims);
    }
    case AttrKind::ListInt: {
      std::vector<std::int64_t> values;
      for (auto part : split_commas(trim(text))) values.push_back(parse_int(part));
      return values;
    }
    case AttrKind::ListFloat: {
      std::vector<double> values;
      for (auto part : split_commas(trim(text))) values.push_back(parse_float(part));
      return values;
    }
    case AttrKind::Tensor:
      break;
  }
  invalid_argument("attributes of kind ", attr_kind_name(kind), " cannot be given as text");
}

}  // namespace dagrad
