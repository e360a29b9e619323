// Sets an environment variable for one scope (ctest runs each test case in its own process).
#pragma once

#include <cstdlib>
#include <string>

namespace dagrad::testing {

struct ScopedEnv {
  std::string name;
  ScopedEnv(std::string n, const char* value) : name(std::move(n)) { setenv(name.c_str(), value, 1); }
  ~ScopedEnv() { unsetenv(name.c_str()); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
};

}  // namespace dagrad::testing
