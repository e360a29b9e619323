// `dagrad check`: the op case table for users; a table (or JSON) and exit 0 when every check
// passes, exit 1 with one error line otherwise, exit 2 on a usage error.
#include "cli_runner.hpp"

#include <set>

#include <nlohmann/json.hpp>

using Catch::Matchers::Contains;
using dagrad::cli_testing::check_error;
using dagrad::cli_testing::check_usage;
using dagrad::cli_testing::Result;
using dagrad::cli_testing::run_cli;

TEST_CASE("cli: check prints a table of backends, dtypes and checks", "[cli][cases]") {
  const Result r = run_cli("check Relu Mul --dtype float --dtype double");
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  CHECK(r.status == 0);
  CHECK(r.err.empty());
  CHECK_THAT(r.out, Contains("forward") && Contains("second order"));
  CHECK_THAT(r.out, Contains("Relu") && Contains("Mul") && Contains("cpu") && Contains("reference"));
  CHECK_THAT(r.out, Contains("PASS") && Contains(" 0 failed"));
  CHECK_THAT(r.out, !Contains("half"));

  const Result json = run_cli("check Neg --dtype double --order 1 --json");
  INFO("stdout: " << json.out << "\nstderr: " << json.err);
  CHECK(json.status == 0);
  // One line of JSON, typed: the rows of Neg's forward and gradient checks, passed.
  REQUIRE(std::count(json.out.begin(), json.out.end(), '\n') == 1);
  const auto report = nlohmann::json::parse(json.out);
  CHECK(report.at("passed") == true);
  REQUIRE(!report.at("rows").empty());
  std::set<std::string> checks;
  for (const auto& row : report.at("rows")) {
    CHECK(row.at("op") == "Neg");
    CHECK(row.at("dtype") == "double");
    CHECK(row.at("status") == "PASS");
    CHECK(row.at("error").is_number());
    checks.insert(row.at("check").get<std::string>());
  }
  CHECK(checks == std::set<std::string>{"forward", "gradient"});

  // Two shards share the ops: each checks some, together all (every op of the table once).
  const Result first = run_cli("check --shard 1/2 --order 0"), second = run_cli("check --shard 2/2 --order 0");
  CHECK(first.status == 0);
  CHECK(second.status == 0);
  CHECK_THAT(first.out, Contains("\nAdd ") && !Contains("\nAddN "));
  CHECK_THAT(second.out, Contains("\nAddN ") && !Contains("\nAdd "));
}

TEST_CASE("cli: check refuses what it cannot check", "[cli][cases]") {
  check_error(run_cli("check NoSuchOp"), "Op type not registered 'NoSuchOp'");
  check_error(run_cli("check Placeholder"), "has no cases");
  check_error(run_cli("check Neg --dtype complex"), "complex");
  check_usage(run_cli("check Neg --order 3"), "--order");
  check_usage(run_cli("check --shard 3/2"), "--shard: expected K/N with 1 <= K <= N <= 1000, got '3/2'");
}

TEST_CASE("cli: run-op, gradcheck and bench-op take an op case's inputs with --case", "[cli][cases]") {
  const Result run = run_cli("run-op Conv2D --case \"NHWC VALID\" --dtype double");
  INFO("stdout: " << run.out << "\nstderr: " << run.err);
  CHECK(run.status == 0);
  CHECK_THAT(run.out, Contains("output: Tensor<double, [1,3,3,3]>"));
  const Result grad = run_cli("gradcheck MaxPool --case \"NCHW VALID 2x2 stride 1\" --dtype double");
  INFO("stdout: " << grad.out << "\nstderr: " << grad.err);
  CHECK(grad.status == 0);
  CHECK_THAT(grad.out, Contains("PASSED"));
  const Result bench = run_cli("bench-op MatMul --case \"aT b\" --repeat 3");
  INFO("stdout: " << bench.out << "\nstderr: " << bench.err);
  CHECK(bench.status == 0);
  CHECK_THAT(bench.out, Contains("\"op\":\"MatMul\""));
  check_error(run_cli("run-op Conv2D --case nowhere"), "no case 'nowhere'; its cases are 'NHWC VALID'");
  check_usage(run_cli("run-op Neg --case \"[4]\" --in x=zeros:2"), "--in and --case exclude each other");
}
