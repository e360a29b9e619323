// The CLI for people and programs: --version, "did you mean" for unknown names, `ops` filters, and
// the typed, one-line JSON of ops --json, bench-op, gradcheck --json (which names the backend it
// checked, as its text report does).
#include "cli_runner.hpp"

#include <cstdlib>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include <dagrad/dagrad.hpp>
#include <dagrad/version.hpp>

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using dagrad::cli_testing::check_error;
using dagrad::cli_testing::check_usage;
using dagrad::cli_testing::Result;
using dagrad::cli_testing::run_cli;
using nlohmann::json;

namespace {

// A successful run's stdout as one line of JSON.
json json_line(const Result& r) {
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  REQUIRE(r.status == 0);
  CHECK(r.err.empty());
  REQUIRE(std::count(r.out.begin(), r.out.end(), '\n') == 1);
  return json::parse(r.out);
}

}  // namespace

TEST_CASE("cli: --version prints the version and the build's backends and CPU", "[cli]") {
  const Result r = run_cli("--version");
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  CHECK(r.status == 0);
  CHECK(r.err.empty());
  CHECK_THAT(r.out, StartsWith(std::string("dagrad ") + DAGRAD_VERSION_STRING + "\n"));
  std::set<std::string> backends;
  for (const dagrad::KernelDef* k : dagrad::kernel_registry().list()) backends.insert(k->backend);
  std::string line = "\nbackends:";
  for (const std::string& b : backends) line += " " + b;
  CHECK_THAT(r.out, Contains(line + "\n"));
  CHECK_THAT(r.out, Contains("\ncpu: ") && Contains("\ncompiler: "));
}

TEST_CASE("cli: an unknown op or subcommand is answered with the closest names", "[cli]") {
  check_error(run_cli("ops conv2d"), "Op type not registered 'conv2d'; did you mean 'Conv2D'?");
  check_error(run_cli("run-op relu --in features=zeros:2"), "Op type not registered 'relu'; did you mean 'Relu'?");
  check_error(run_cli("gradcheck matmul --in a=zeros:2,2 --in b=zeros:2,2"), "did you mean 'MatMul'?");
  check_error(run_cli("bench-op Conv2DBackpropFiterV2"), "did you mean 'Conv2DBackpropFilterV2'?");
  check_error(run_cli("check neg"), "did you mean 'Neg'?");
  check_error(run_cli("ops NoSuchOp"), "Op type not registered 'NoSuchOp'");
  CHECK_THAT(run_cli("ops NoSuchOp").err, !Contains("did you mean"));
  check_usage(run_cli("op"), "unknown subcommand 'op'; did you mean 'ops'?");
  check_usage(run_cli("grad-check"), "unknown subcommand 'grad-check'; did you mean 'gradcheck'?");
}

TEST_CASE("cli: ops --kernels filters by op, device and dtype", "[cli]") {
  // The expected lines come from the registry: "cpu bfloat16: cpu, reference" in priority order.
  std::map<std::pair<int, dagrad::DType>, std::string> expected;
  for (const dagrad::KernelDef* k : dagrad::kernel_registry().list("Conv2D")) {
    if (k->device != dagrad::Device::Kind::CPU || k->dtype != dagrad::DType::BFloat16) continue;
    std::string& line = expected[{0, k->dtype}];
    line += (line.empty() ? "" : ", ") + k->backend;
  }
  REQUIRE(expected.size() == 1);
  Result r = run_cli("ops Conv2D --device cpu --dtype bfloat16");
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, Contains("    kernels:\n      cpu bfloat16: " + expected.begin()->second + "\n"));
  CHECK_THAT(r.out, !Contains(" float:") && !Contains(" half:"));

  // No names: every op with a matching kernel, and only those kernels.
  r = run_cli("ops --dtype half");
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, Contains("cpu half: ") && !Contains(" float: ") && !Contains(" double: "));
  std::size_t with_half = 0, listed = 0;
  for (const dagrad::OpDef* def : dagrad::op_registry().list()) {
    for (const dagrad::KernelDef* k : dagrad::kernel_registry().list(def->name)) {
      if (k->dtype == dagrad::DType::Half || k->dtype == dagrad::DType::Invalid) {
        ++with_half;
        break;
      }
    }
  }
  for (std::size_t at = r.out.find("    kernels:\n"); at != std::string::npos;
       at = r.out.find("    kernels:\n", at + 1))
    ++listed;
  CHECK(listed == with_half);
  CHECK(with_half < dagrad::op_registry().list().size());
  r = run_cli("ops Neg Relu --kernels");
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, StartsWith("Neg(") && Contains("\nRelu(") && !Contains("AddV2"));

  check_usage(run_cli("ops --device tpu"), "unknown device 'tpu'; expected cpu, cuda or cuda:N");
  check_usage(run_cli("ops --dtype complex"), "unknown dtype 'complex'; expected one of half, bfloat16");
}

TEST_CASE("cli: ops --json gives every schema typed", "[cli]") {
  const json all = json_line(run_cli("ops --json"));
  CHECK(all.at("ops").size() == dagrad::op_registry().list().size());
  const json conv = json_line(run_cli("ops Conv2D --json --kernels --dtype float --paths")).at("ops").at(0);
  CHECK(conv.at("name") == "Conv2D");
  CHECK(conv.at("signature") == dagrad::op_registry().get("Conv2D").signature());
  CHECK(conv.at("inputs").at(1) ==
        json{{"name", "filter"}, {"type_attr", "T"}, {"host_memory", false}, {"ref", false}});
  std::map<std::string, json> attrs;
  for (const json& a : conv.at("attrs")) attrs[a.at("name").get<std::string>()] = a;
  CHECK(attrs.at("strides").at("kind") == "list(int)");
  CHECK(attrs.at("strides").at("required") == true);
  CHECK(attrs.at("dilations").at("default") == json{1, 1, 1, 1});
  CHECK(attrs.at("use_cudnn_on_gpu").at("default") == true);
  CHECK(attrs.at("data_format").at("default") == "NHWC");
  CHECK(attrs.at("padding").at("allowed") == json{"SAME", "VALID", "EXPLICIT"});
  CHECK(attrs.at("T").at("kind") == "type");
  REQUIRE(!conv.at("kernels").empty());
  for (const json& k : conv.at("kernels")) CHECK(k.at("dtype") == "float");
  CHECK(conv.at("cpu_paths").back() == "generic");
  CHECK(conv.at("has_cost_model") == true);
}

TEST_CASE("cli: bench-op's JSON carries typed attributes and exact flops", "[cli]") {
  const json line = json_line(
      run_cli("bench-op Conv2D --in input=random:3,17,19,7 --in filter=random:3,3,7,11 --attr strides=1,1,1,1 "
              "--attr padding=SAME --repeat 1 --warmup 0 --threads 1"));
  CHECK(line.at("op") == "Conv2D");
  CHECK(line.at("inputs") == json{{"input", {3, 17, 19, 7}}, {"filter", {3, 3, 7, 11}}});
  const json& attrs = line.at("attrs");
  CHECK(attrs.at("strides") == json{1, 1, 1, 1});
  CHECK(attrs.at("padding") == "SAME");
  CHECK(attrs.at("T") == "float");
  CHECK(attrs.at("use_cudnn_on_gpu") == true);
  CHECK(attrs.at("explicit_paddings") == json::array());
  CHECK(line.at("dtype") == "float");
  CHECK(line.at("backend") == "default");
  CHECK(line.at("path").is_null());
  CHECK(line.at("threads") == 1);
  // The op's own cost model on these shapes, to the last bit (2 * 3*17*19 * 11 * 3*3*7 = 1343034).
  dagrad::AttrMap a = {{"strides", std::vector<std::int64_t>{1, 1, 1, 1}}, {"padding", std::string("SAME")}};
  const dagrad::OpDef& def = dagrad::op_registry().get("Conv2D");
  dagrad::complete_attrs(def, a, {dagrad::DType::Float32, dagrad::DType::Float32});
  const std::vector<dagrad::Shape> in = {{3, 17, 19, 7}, {3, 3, 7, 11}}, out = {{3, 17, 19, 11}};
  const auto flops = def.flops({a, in, out});
  REQUIRE(flops);
  CHECK(line.at("flops").get<double>() == *flops);
  CHECK(*flops == 1343034.0);
  CHECK(line.at("median_ms").get<double>() > 0);

  // A list argument's tensors are named as gradcheck names them.
  const json addn =
      json_line(run_cli("bench-op AddN --in inputs=zeros:2 --in inputs=random:2:1 --repeat 1 --warmup 0"));
  CHECK(addn.at("inputs") == json{{"inputs_0", {2}}, {"inputs_1", {2}}});
}

TEST_CASE("cli: gradcheck names the backend it checked, in text and JSON", "[cli][autodiff]") {
  const std::string conv =
      "gradcheck Conv2D --in input=random:1,4,4,2:1 --in filter=random:2,2,2,2:2 --attr strides=1,1,1,1 "
      "--attr padding=VALID --dtype double";
  // The default is the library's: the reference kernels.
  Result r = run_cli(conv);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, Contains(", backend reference on cpu, seed "));
  r = run_cli(conv + " --backend cpu");
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, Contains(", backend cpu on cpu, seed "));
  r = run_cli(conv + " --path generic");  // a forced path is the cpu kernels'
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, Contains(", backend cpu on cpu (path generic), seed "));

  const json result = json_line(run_cli(conv + " --json --mode fast"));
  CHECK(result.at("op") == "Conv2D");
  CHECK(result.at("passed") == true);
  CHECK(result.at("backend") == "reference");
  CHECK(result.at("device") == "cpu");
  CHECK(result.at("path").is_null());
  CHECK(result.at("mode") == "fast");
  CHECK(result.at("seed") == 20261202);
  REQUIRE(result.at("inputs").size() == 2);
  CHECK(result.at("inputs").at(0).at("name") == "input");
  CHECK(result.at("inputs").at(1).at("shape") == json{2, 2, 2, 2});
  for (const json& input : result.at("inputs")) {
    CHECK(input.at("status") == "PASS");
    CHECK(input.at("tolerance").get<double>() > 0);
    CHECK(input.at("abs_error").get<double>() <= input.at("tolerance").get<double>());
  }
  CHECK(json_line(run_cli(conv + " --json --path generic")).at("path") == "generic");

  // A failed check: the JSON on stdout, then the error line and status 1.
  const Result failed = run_cli("gradcheck Mul --in x=random:2,3 --in y=zeros:2,3 --json");
  CHECK(failed.status == 1);
  CHECK_THAT(failed.err, StartsWith("error: gradcheck: Mul failed"));
  const json report = json::parse(failed.out);
  CHECK(report.at("passed") == false);
  CHECK(report.at("inputs").at(0).at("status") == "FAIL");
  CHECK_THAT(report.at("inputs").at(0).at("message").get<std::string>(), Contains("vacuously"));
}

TEST_CASE("cli: DAGRAD_LOG_LEVEL=info logs the kernels of each plan; a bad value is an error", "[cli]") {
  // The child processes inherit this process's environment (ctest runs each test case alone).
  setenv("DAGRAD_LOG_LEVEL", "info", 1);
  const Result r = run_cli("gradcheck Neg --in x=random:3 --mode fast");
  setenv("DAGRAD_LOG_LEVEL", "bogus", 1);
  const Result bad = run_cli("gradcheck Neg --in x=random:3 --mode fast");
  unsetenv("DAGRAD_LOG_LEVEL");
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  CHECK(r.status == 0);
  CHECK_THAT(r.err, StartsWith("dagrad: node 'Neg' (Neg, cpu, float): kernel reference\n"));
  CHECK_THAT(r.err, Contains("dagrad: node 'Neg' (Neg, cpu, double): kernel reference\n"));
  CHECK_THAT(r.out, StartsWith("gradcheck Neg: float"));
  check_error(bad, "DAGRAD_LOG_LEVEL: unknown log level 'bogus'; expected one of off, info");
}
