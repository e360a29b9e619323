// The dagrad CLI: parses the command line with CLI11, dispatches to a subcommand, and turns
// every failure into an exit status (0 success, 1 dagrad::Error, 2 usage) and one stderr line.
//
// Adding a subcommand: write tools/<name>_command.cpp defining
//   Subcommand add_<name>_command(CLI::App& parent);
// (see command.hpp; reuse op_options.hpp, input_spec.hpp and attr_args.hpp to run an op) and add
// X(<name>) to DAGRAD_CLI_SUBCOMMANDS below. tools/CMakeLists.txt picks the file up by itself.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <new>
#include <string>
#include <vector>

#include "dagrad/core/error.hpp"
#include "dagrad/core/op_library.hpp"
#include "dagrad/core/program.hpp"
#include "dagrad/core/suggest.hpp"
#include "dagrad/tools/command.hpp"
#include "dagrad/tools/version_text.hpp"

#define DAGRAD_CLI_SUBCOMMANDS(X) \
  X(ops)                          \
  X(gradcheck)                    \
  X(run_op)                       \
  X(bench_op)                     \
  X(check)                        \
  X(run_graph)                    \
  X(graph)

namespace dagrad::cli {
#define DAGRAD_DECLARE_SUBCOMMAND(name) Subcommand add_##name##_command(CLI::App& parent);
DAGRAD_CLI_SUBCOMMANDS(DAGRAD_DECLARE_SUBCOMMAND)
#undef DAGRAD_DECLARE_SUBCOMMAND
}  // namespace dagrad::cli

namespace {

using dagrad::cli::Subcommand;

using dagrad::kExitUsage;

int usage_error(const std::string& message, const Subcommand* command, const std::string& program_usage) {
  std::cerr << "error: " << message << "\n"
            << "usage: " << (command ? command->usage : program_usage) << "\n";
  return kExitUsage;
}

// The subcommand named on the command line, if any: CLI11 records it as soon as it is seen,
// so that a parse error later on the line is reported with that subcommand's usage.
const Subcommand* chosen(const std::vector<Subcommand>& commands) {
  for (const auto& c : commands) {
    if (c.app->parsed()) return &c;
  }
  return nullptr;
}

int run(int argc, char** argv) {
  CLI::App app("dagrad: inspect and run the ops of the dagrad autodiff framework", "dagrad");
  app.require_subcommand(1);
  // Op libraries (core/op_library.hpp) add their ops before the subcommand runs, so that every
  // subcommand (ops, run-op, gradcheck, bench-op, check) sees them.
  std::vector<std::string> op_libraries;
  app.add_option("--load-ops", op_libraries, "Load an op library (a module made with DAGRAD_OP_LIBRARY); repeatable")
      ->type_name("FILE")
      ->allow_extra_args(false);
  app.set_version_flag("--version", dagrad::cli::version_text,
                       "Print the version, backends and CPU features, and exit");
  std::vector<Subcommand> commands;
#define DAGRAD_ADD_SUBCOMMAND(name) commands.push_back(dagrad::cli::add_##name##_command(app));
  DAGRAD_CLI_SUBCOMMANDS(DAGRAD_ADD_SUBCOMMAND)
#undef DAGRAD_ADD_SUBCOMMAND
  std::string program_usage = "{";
  for (std::size_t i = 0; i < commands.size(); ++i) program_usage += (i ? "," : "") + commands[i].app->get_name();
  program_usage = "dagrad [--load-ops FILE]... " + program_usage + "} ... (dagrad --help for more)";

  // CLI11 would only say "A subcommand is required" for a misspelt one.
  if (argc > 1 && argv[1][0] != '-') {
    std::vector<std::string> names;
    for (const auto& c : commands) names.push_back(c.app->get_name());
    if (std::find(names.begin(), names.end(), argv[1]) == names.end()) {
      const std::string hint = dagrad::did_you_mean(dagrad::closest_names(argv[1], names));
      return usage_error(std::string("unknown subcommand '") + argv[1] + "'" + hint, nullptr, program_usage);
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return usage_error(e.what(), chosen(commands), program_usage);
  }
  const Subcommand* command = chosen(commands);
  if (command == nullptr) return usage_error("a subcommand is required", nullptr, program_usage);
  try {
    for (const std::string& path : op_libraries) dagrad::load_op_library(path);
    command->run();
    return 0;
  } catch (const dagrad::cli::UsageError& e) {
    return usage_error(e.what(), command, program_usage);
  }
}

}  // namespace

int main(int argc, char** argv) {
  return dagrad::run_main([&] { return run(argc, argv); });
}
