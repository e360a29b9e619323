// What every fuzz target shares: a dagrad::Error is a clean refusal, anything else is a finding.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include <dagrad/core/error.hpp>

namespace dagrad::fuzz {

// Prints why the input is a finding and aborts, so that libFuzzer saves it as a crash.
[[noreturn]] inline void finding(const std::string& what) {
  std::fprintf(stderr, "fuzz finding: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

// Runs `body`: true when it returned, false when it threw dagrad::Error (hostile input refused as
// promised). Any other exception is a finding (user input may only raise dagrad::Error), and so is
// an Internal error, which reports a broken invariant rather than a bad input.
template <class Body>
bool accepted(Body&& body) {
  try {
    body();
    return true;
  } catch (const Error& e) {
    if (e.code() == Code::Internal) finding(std::string("Internal error on user input: ") + e.what());
    return false;
  } catch (const std::exception& e) {
    finding(std::string("an exception other than dagrad::Error escaped: ") + e.what());
  }
}

inline std::string as_string(const std::uint8_t* data, std::size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

}  // namespace dagrad::fuzz
