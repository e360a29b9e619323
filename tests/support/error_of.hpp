// Test helper: runs a callable and returns the dagrad::Error message it threw, or "(no error)".
#pragma once

#include <functional>
#include <string>

#include <dagrad/dagrad.hpp>

namespace dagrad::testing {

// Lets a test compare the exact wording of an error with CHECK_THAT.
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace dagrad::testing
