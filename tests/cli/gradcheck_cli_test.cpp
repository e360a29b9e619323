// `dagrad gradcheck`: one line per input, exit status 0 when every input passes, 1 otherwise.
#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <sstream>

using Catch::Matchers::Contains;

namespace {

struct Run {
  int status = -1;
  std::string out, err;
};

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

Run gradcheck(const std::string& args) {
  const std::filesystem::path dir(DAGRAD_CLI_TEST_DIR);
  std::filesystem::create_directories(dir);
  const std::string out = (dir / "gradcheck_out.txt").string(), err = (dir / "gradcheck_err.txt").string();
  const std::string command =
      std::string("'") + DAGRAD_CLI_PATH + "' gradcheck " + args + " >'" + out + "' 2>'" + err + "'";
  const int raw = std::system(command.c_str());
  return {WIFEXITED(raw) ? WEXITSTATUS(raw) : -1, slurp(out), slurp(err)};
}

}  // namespace

TEST_CASE("cli: gradcheck passes a conv op in every mode and order", "[cli][autodiff]") {
  const std::string conv =
      "Conv2DBackpropFilterV2 --in input=random:1,5,5,2:1 --in filter=random:3,3,2,2:2 "
      "--in out_backprop=random:1,3,3,2:3 --attr strides=1,2,2,1 --attr padding=SAME";
  for (const std::string extra : {"--dtype double", "--mode fast", "--order 2 --dtype double", "--dtype half"}) {
    const Run r = gradcheck(conv + " " + extra);
    INFO(extra << "\nstdout: " << r.out << "\nstderr: " << r.err);
    CHECK(r.status == 0);
    CHECK_THAT(r.out, Contains("PASSED") && Contains("seed 20261202"));
    CHECK_THAT(r.out, Contains("  input ") && Contains("  out_backprop ") && Contains("  filter "));
    CHECK(r.err.empty());
  }
}

TEST_CASE("cli: gradcheck exits 1 on a failed check and on an error", "[cli][autodiff]") {
  // y = 0: x's Jacobian is zero, so its check would pass vacuously and fails instead.
  const Run vacuous = gradcheck("Mul --in x=random:2,3 --in y=zeros:2,3");
  CHECK(vacuous.status == 1);
  CHECK_THAT(vacuous.out, Contains("x float[2,3]: FAIL") && Contains("vacuously"));
  CHECK_THAT(vacuous.err, Contains("error: gradcheck: Mul failed the gradient check"));
  const Run missing = gradcheck("Conv2D --in input=random:1,5,5,2");
  CHECK(missing.status == 1);
  CHECK_THAT(missing.err, Contains("missing input 'filter'"));
}
