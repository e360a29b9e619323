// Command-line helpers shared by the benchmarks: strict integer parsing, the usage-error exit
// (status 2, an "error:" line and the usage line), so that no option is silently read as 0, and
// --help.
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

// Whether the command line asks for help (--help or -h anywhere): a bench then prints its usage
// and exits 0 before it measures anything.
inline bool asks_for_help(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") return true;
  }
  return false;
}

}  // namespace dagrad_bench
