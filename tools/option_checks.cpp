// Numeric option validators with short, exact messages (see option_checks.hpp).
#include "dagrad/tools/option_checks.hpp"

#include <CLI/CLI.hpp>

#include <charconv>
#include <cmath>
#include <optional>

#include "dagrad/core/device.hpp"
#include "dagrad/core/dtype.hpp"
#include "dagrad/core/error.hpp"

namespace dagrad::cli {
namespace {

constexpr std::size_t kShownCharacters = 24;

// The whole of `text` parsed as T, or nothing (garbage, overflow, an empty string).
template <class T>
std::optional<T> parse_whole(std::string_view text) {
  T value{};
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace

std::string abbreviated(std::string_view text) {
  if (text.size() <= kShownCharacters) return str_cat("'", text, "'");
  return str_cat("'", text.substr(0, kShownCharacters), "...' (", text.size(), " characters)");
}

CLI::Validator integer_in(std::int64_t minimum, std::int64_t maximum) {
  const std::string range = str_cat("an integer in [", minimum, ", ", maximum, "]");
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        const auto value = parse_whole<std::int64_t>(text);
        if (value && *value >= minimum && *value <= maximum) return {};
        return str_cat(abbreviated(text), " is not ", range);
      },
      "INT in [" + std::to_string(minimum) + ", " + std::to_string(maximum) + "]");
}

CLI::Validator unsigned_integer() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        if (parse_whole<std::uint64_t>(text)) return {};
        return str_cat(abbreviated(text), " is not an integer in [0, 2^64 - 1]");
      },
      "UINT64");
}

CLI::Validator positive_number() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const auto value = parse_whole<double>(text);
        if (value && std::isfinite(*value) && *value > 0) return {};
        return str_cat(abbreviated(text), " is not a finite number above 0");
      },
      "POSITIVE");
}

std::string check_device(const std::string& text) {
  try {
    Device::parse(text);
    return {};
  } catch (const Error& e) {
    return e.what();
  }
}

std::string check_dtype(const std::string& text) {
  try {
    parse_dtype(text);
    return {};
  } catch (const Error& e) {
    return e.what();
  }
}

}  // namespace dagrad::cli
