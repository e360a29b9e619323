// Log levels by name, the environment's level, and the default sink.
#include "dagrad/core/log.hpp"

#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

#include "dagrad/core/error.hpp"

namespace dagrad {
namespace {

constexpr std::array<std::pair<std::string_view, LogLevel>, 2> kLevels = {{
    {"off", LogLevel::Off},
    {"info", LogLevel::Info},
}};

}  // namespace

std::string_view log_level_name(LogLevel level) {
  for (const auto& [name, value] : kLevels) {
    if (value == level) return name;
  }
  return "unknown";
}

LogLevel parse_log_level(std::string_view text, std::string_view what) {
  for (const auto& [name, value] : kLevels) {
    if (name == text) return value;
  }
  std::string names;
  for (const auto& entry : kLevels) names += (names.empty() ? "" : ", ") + std::string(entry.first);
  // Cut short: the text may be anything the environment holds.
  const std::string shown = text.size() > 40 ? std::string(text.substr(0, 40)) + "..." : std::string(text);
  invalid_argument(what, ": unknown log level '", shown, "'; expected one of ", names);
}

LogLevel env_log_level() {
  const char* value = std::getenv("DAGRAD_LOG_LEVEL");
  if (value == nullptr || *value == '\0') return LogLevel::Off;
  return parse_log_level(value, "DAGRAD_LOG_LEVEL");
}

void write_log_line(const LogSink& sink, std::string_view line) {
  if (sink) {
    sink(line);
    return;
  }
  // One write per line, so that lines of concurrent sessions do not interleave mid-line.
  std::string text = std::string(line) + "\n";
  std::fwrite(text.data(), 1, text.size(), stderr);
}

}  // namespace dagrad
