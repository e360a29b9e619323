// What a subcommand hands to main.cpp, and the usage-error type subcommands throw.
#pragma once

#include <functional>
#include <stdexcept>
#include <string>

namespace CLI {
class App;
}

namespace dagrad::cli {

// A command line that does not fit the grammar (exit status 2), found after CLI11 has parsed,
// e.g. "--in x" without "=SPEC". Mistakes in values (a bad file, a bad attribute value) are
// dagrad::Error instead (exit status 1).
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Subcommand {
  CLI::App* app = nullptr;  // owned by the parent app
  std::string usage;        // one line, printed on a usage error
  // Runs after a successful parse; throws dagrad::Error or UsageError.
  std::function<void()> run;
};

}  // namespace dagrad::cli
