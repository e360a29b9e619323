// Diagnostic logging: a level (SessionOptions::log_level, else the DAGRAD_LOG_LEVEL environment
// variable) and a sink for the lines (standard error unless the user gives one).
#pragma once

#include <functional>
#include <string_view>

namespace dagrad {

enum class LogLevel {
  Off,   // nothing (the default)
  Info,  // each plan's kernel choices: on its first run, one line per kernel node
};

std::string_view log_level_name(LogLevel level);  // "off", "info"
// "off" or "info"; InvalidArgument naming `what` (an option or variable), the value and the levels.
LogLevel parse_log_level(std::string_view text, std::string_view what = "log level");
// DAGRAD_LOG_LEVEL's level: Off when unset or empty; InvalidArgument naming it for a bad value.
LogLevel env_log_level();

// Receives each log line, without its newline. An empty sink writes the line to standard error.
using LogSink = std::function<void(std::string_view line)>;
void write_log_line(const LogSink& sink, std::string_view line);

}  // namespace dagrad
