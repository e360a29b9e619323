// Test helper: runs the built `dagrad` binary through the shell and checks its exit status and
// stderr the way the CLI promises (0 success, 1 one "error: ..." line, 2 an error and a usage line).
#pragma once

#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace dagrad::cli_testing {

struct Result {
  int status = -1;  // 124: killed by the 60 s timeout (a hang)
  std::string out, err;
};

// A folder of this process's own: ctest runs the test cases as parallel processes.
inline std::string path_in_dir(const std::string& name) {
  const std::filesystem::path dir = std::filesystem::path(DAGRAD_CLI_TEST_DIR) / std::to_string(getpid());
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs `dagrad ARGS` with stdout sent to `stdout_path` (default: a file read back into `out`)
// and stderr captured; a run that hangs is killed after 60 seconds.
inline Result run_cli(const std::string& args, const std::string& stdout_path = "") {
  const std::string out = stdout_path.empty() ? path_in_dir("stdout.txt") : stdout_path;
  const std::string err = path_in_dir("stderr.txt");
  const std::string command =
      std::string("timeout -k 5 60 '") + DAGRAD_CLI_PATH + "' " + args + " >'" + out + "' 2>'" + err + "'";
  const int raw = std::system(command.c_str());
  Result r;
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  if (stdout_path.empty()) r.out = read_text(out);
  r.err = read_text(err);
  return r;
}

// A dagrad::Error: status 1, nothing on stdout, exactly one "error: ..." line on stderr.
inline void check_error(const Result& r, const std::string& fragment) {
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  CHECK(r.status == 1);
  CHECK(r.out.empty());
  CHECK_THAT(r.err, Catch::Matchers::StartsWith("error: ") && Catch::Matchers::Contains(fragment));
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
}

// A usage error: status 2, an error line and a usage line on stderr.
inline void check_usage(const Result& r, const std::string& fragment) {
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  CHECK(r.status == 2);
  CHECK(r.out.empty());
  CHECK_THAT(r.err, Catch::Matchers::StartsWith("error: ") && Catch::Matchers::Contains(fragment) &&
                        Catch::Matchers::Contains("\nusage: dagrad"));
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 2);
}

}  // namespace dagrad::cli_testing
