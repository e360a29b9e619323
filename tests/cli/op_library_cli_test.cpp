// `dagrad --load-ops FILE`: the CLI loads op libraries (core/op_library.hpp) before its
// subcommand, so `check` runs an outside op's cases (examples/custom_op's Swish and Sigmoid) and
// catches a wrong gradient; a missing file, a file that is no op library and a library whose
// registration fails are errors naming the file.
#include "cli_runner.hpp"

namespace dagrad::cli_testing {
namespace {

using Catch::Matchers::Contains;

const std::string kSwish = std::string("--load-ops '") + DAGRAD_SWISH_MODULE + "' ";
const std::string kWrongGradient = std::string("--load-ops '") + DAGRAD_WRONG_SWISH_GRADIENT_MODULE + "' ";

}  // namespace

TEST_CASE("check runs the cases of an op library loaded with --load-ops", "[cli][op_library]") {
  const Result r = run_cli(kSwish + "check Swish Sigmoid --dtype float --dtype double");
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  CHECK(r.status == 0);
  for (const char* row : {"Swish", "Sigmoid"}) {
    CHECK_THAT(r.out, Contains(std::string(row) + " ") && Contains("cpu"));
  }
  CHECK_THAT(r.out, Contains("0 failed"));
  // Listed like dagrad's own ops; loading the same file twice adds nothing twice.
  const Result ops = run_cli(kSwish + kSwish + "ops Swish");
  CHECK(ops.status == 0);
  CHECK_THAT(ops.out, Contains("Swish(x: T) -> (y: T)"));
}

TEST_CASE("check fails an op library's wrong gradient", "[cli][op_library]") {
  const Result r = run_cli(kSwish + kWrongGradient + "check Swish --dtype double");
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  CHECK(r.status == 1);
  CHECK_THAT(r.out, Contains("FAIL Swish") && Contains("gradient"));
  CHECK_THAT(r.err, Contains("check: some checks failed"));
}

TEST_CASE("the CLI names an op library file that is missing, not one, or fails to register", "[cli][op_library]") {
  check_error(run_cli("--load-ops /nonexistent/libnothing.so ops"),
              "op library '/nonexistent/libnothing.so': no such file");
  check_error(run_cli(std::string("--load-ops '") + DAGRAD_NOT_AN_OP_LIBRARY_MODULE + "' ops"),
              "': not an op library (no dagrad_op_library_abi");
  check_error(run_cli(std::string("--load-ops '") + DAGRAD_WRONG_ABI_MODULE + "' ops"),
              "': built for op library ABI 999, this dagrad has ");
  check_error(run_cli(std::string("--load-ops '") + DAGRAD_UNDEFINED_SYMBOL_MODULE + "' ops"),
              "undefined symbol: dagrad_test_symbol_nobody_defines (an op library uses the dagrad of the program");
  // Swish's gradient replaced before Swish exists: nothing to replace.
  check_error(run_cli(kWrongGradient + "ops"), "gradient for op 'Swish', which is not registered");
  check_error(run_cli(kWrongGradient + "ops"), DAGRAD_WRONG_SWISH_GRADIENT_MODULE);
  const std::string text = path_in_dir("not_elf.so");
  std::ofstream(text) << "text\n";
  check_error(run_cli("--load-ops '" + text + "' ops"), "': cannot load it: ");
  const Result usage = run_cli("--load-ops");
  CHECK(usage.status == 2);
}

}  // namespace dagrad::cli_testing
