// Names of error codes, for messages and the CLI.
#include "dagrad/core/error.hpp"

namespace dagrad {

std::string_view code_name(Code code) {
  switch (code) {
    case Code::InvalidArgument:
      return "InvalidArgument";
    case Code::FailedPrecondition:
      return "FailedPrecondition";
    case Code::Unimplemented:
      return "Unimplemented";
    case Code::NotFound:
      return "NotFound";
    case Code::OutOfRange:
      return "OutOfRange";
    case Code::ResourceExhausted:
      return "ResourceExhausted";
    case Code::Internal:
      return "Internal";
  }
  return "Unknown";
}

}  // namespace dagrad
