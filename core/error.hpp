// dagrad::Error: the one exception type user-facing code throws, with a status code.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>

namespace dagrad {

enum class Code {
  InvalidArgument,
  FailedPrecondition,
  Unimplemented,
  NotFound,
  OutOfRange,
  ResourceExhausted,
  Internal,
};

std::string_view code_name(Code code);

class Error : public std::runtime_error {
 public:
  Error(Code code, const std::string& message) : std::runtime_error(message), code_(code) {}
  Code code() const { return code_; }

 private:
  Code code_;
};

// Concatenates anything streamable: str_cat("x = ", 3, " dims") -> "x = 3 dims".
template <class... Args>
std::string str_cat(const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}

template <class... Args>
[[noreturn]] void fail(Code code, const Args&... args) {
  throw Error(code, str_cat(args...));
}

template <class... Args>
[[noreturn]] void invalid_argument(const Args&... args) {
  fail(Code::InvalidArgument, args...);
}

}  // namespace dagrad

// Like TF's OP_REQUIRES: the message is only built when the check fails.
#define DAGRAD_REQUIRE(cond, ...)                                              \
  do {                                                                         \
    if (!(cond)) ::dagrad::fail(::dagrad::Code::InvalidArgument, __VA_ARGS__); \
  } while (0)

#define DAGRAD_REQUIRE_CODE(cond, code, ...)                        \
  do {                                                              \
    if (!(cond)) ::dagrad::fail(::dagrad::Code::code, __VA_ARGS__); \
  } while (0)
