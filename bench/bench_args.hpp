// Command-line helpers shared by the benchmarks: strict integer parsing and the usage-error exit
// (status 2, an "error:" line and the usage line), so that no option is silently read as 0.
#pragma once

#include <charconv>
#include <cstdio>
#include <optional>
#include <string>

namespace dagrad_bench {

// `text` as an integer in [lo, hi], or nothing (not a number, trailing characters, out of range).
inline std::optional<long> parse_int(const std::string& text, long lo, long hi) {
  long value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < lo || value > hi) return std::nullopt;
  return value;
}

// Prints "error: MESSAGE" and the usage line to stderr; returns the usage-error status, 2.
inline int usage_error(const std::string& message, const char* usage) {
  std::fprintf(stderr, "error: %s\nusage: %s\n", message.c_str(), usage);
  return 2;
}

}  // namespace dagrad_bench
