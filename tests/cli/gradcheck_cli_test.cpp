// `dagrad gradcheck`: one line per input, exit status 0 when every input passes, 1 otherwise.
#include "cli_runner.hpp"

using Catch::Matchers::Contains;
using dagrad::cli_testing::Result;

namespace {

Result gradcheck(const std::string& args) { return dagrad::cli_testing::run_cli("gradcheck " + args); }

}  // namespace

TEST_CASE("cli: gradcheck passes a conv op in every mode and order", "[cli][autodiff]") {
  const std::string conv =
      "Conv2DBackpropFilterV2 --in input=random:1,5,5,2:1 --in filter=random:3,3,2,2:2 "
      "--in out_backprop=random:1,3,3,2:3 --attr strides=1,2,2,1 --attr padding=SAME";
  // --path forces the cpu conv path of every conv node of the symbolic side (its gradients too).
  for (const std::string extra : {"--dtype double", "--mode fast", "--order 2 --dtype double", "--dtype half",
                                  "--path nhwc_fast", "--order 2 --dtype double --path generic"}) {
    const Result r = gradcheck(conv + " " + extra);
    INFO(extra << "\nstdout: " << r.out << "\nstderr: " << r.err);
    CHECK(r.status == 0);
    CHECK_THAT(r.out, Contains("PASSED") && Contains("seed 20261202"));
    CHECK_THAT(r.out, Contains("  input ") && Contains("  out_backprop ") && Contains("  filter "));
    CHECK(r.err.empty());
  }
}

TEST_CASE("cli: gradcheck exits 1 on a failed check and on an error", "[cli][autodiff]") {
  // y = 0: x's Jacobian is zero, so its check would pass vacuously and fails instead.
  const Result vacuous = gradcheck("Mul --in x=random:2,3 --in y=zeros:2,3");
  CHECK(vacuous.status == 1);
  CHECK_THAT(vacuous.out, Contains("x float[2,3]: FAIL") && Contains("vacuously"));
  CHECK_THAT(vacuous.err, Contains("error: gradcheck: Mul failed the gradient check"));
  const Result missing = gradcheck("Conv2D --in input=random:1,5,5,2");
  CHECK(missing.status == 1);
  CHECK_THAT(missing.err, Contains("missing input 'filter'"));
}
