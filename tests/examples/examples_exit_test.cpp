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

TEST_CASE("examples: custom_op checks its outside op's gradients and catches a planted wrong one", "[examples]") {
  ExampleDir dir("custom_op");
  const Result ok = run_program(DAGRAD_CUSTOM_OP_PATH, {}, dir.path);
  INFO(ok.out << ok.err);
  CHECK(ok.status == 0);
  CHECK_THAT(ok.out, Contains("formula: OK, finite differences: OK, case table: OK"));

  const Result planted = run_program(DAGRAD_CUSTOM_OP_PATH, {"--plant-wrong-gradient"}, dir.path);
  INFO(planted.out << planted.err);
  CHECK(planted.status == 1);
  CHECK_THAT(planted.out, Contains("formula: FAILED, finite differences: FAILED, case table: FAILED"));
  CHECK_THAT(planted.err, Contains("error: custom_op: a gradient check failed"));

  CHECK(run_program(DAGRAD_CUSTOM_OP_PATH, {"--bogus"}, dir.path).status == 2);
}
