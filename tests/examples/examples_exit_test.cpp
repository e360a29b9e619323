// The other example programs through their built binaries: 0 on success, 1 with "error:" when
// their output cannot be written.
#include <catch2/catch.hpp>

#include "examples/example_process.hpp"

using namespace dagrad::testing;
using Catch::Matchers::Contains;

TEST_CASE("examples: demo and gradcheck succeed, and fail when stdout is full", "[examples]") {
  ExampleDir dir("exit_status");
  for (const char* program : {DAGRAD_DEMO_PATH, DAGRAD_GRADCHECK_EXAMPLE_PATH}) {
    INFO(program);
    const Result ok = run_program(program, {}, dir.path);
    CHECK(ok.status == 0);
    CHECK_FALSE(ok.out.empty());
    if (!fs::exists("/dev/full")) continue;
    const Result full = run_program(program, {}, dir.path, "/dev/full");
    CHECK(full.status == 1);
    CHECK_THAT(full.err, Contains("error: cannot write to standard output"));
  }
}
