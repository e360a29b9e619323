// `dagrad run-graph` and `dagrad graph` on a model saved through the C++ API: outputs equal the
// session's bit for bit, feeds by signature name or node, summaries, Graphviz and JSON, and
// every bad model or argument refused with the CLI's exit statuses.
#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>

#include <dagrad/core/saved_model.hpp>
#include <dagrad/dagrad.hpp>

#include "cli_runner.hpp"

using namespace dagrad;
using Catch::Matchers::Contains;

namespace {

namespace fs = std::filesystem;
using namespace dagrad::cli_testing;

// y = x @ w + b with w a variable (initialised by "init", a NoOp after the assign) and b a Const.
struct TinyModel {
  Graph g;
  Output x, w, y;
  const Node* init = nullptr;
  TinyModel() {
    x = ops::placeholder(g, DType::Float32, Shape{-1, 3}, "x");
    w = ops::variable(g, Shape{3, 2}, DType::Float32, "w");
    const Output assign =
        ops::assign(g, w, ops::constant(g, Tensor::from_values<float>(Shape{3, 2}, {1, 2, 3, 4, 5, 6})));
    init = &ops::group(g, {&assign.op()}, "init");
    const Output xw = g.output(g.add_node("MatMul", {x, w}, {}, "matmul").id);
    y = g.output(g.add_node("BiasAdd", {xw, ops::constant(g, Tensor::from_values<float>(Shape{2}, {0.5f, -0.25f}))}, {},
                            "logits")
                     .id);
  }
};

// Saves the tiny model to a fresh directory and returns it, with the session that saved it.
std::string saved_tiny_model(const std::string& name,
                             const Signature& signature = {.inputs = {{"features", "x:0"}},
                                                           .outputs = {{"scores", "logits:0"}}}) {
  TinyModel m;
  Session s(m.g);
  s.run({}, {}, {m.init});
  const std::string dir = path_in_dir(name);
  fs::remove_all(dir);
  save_model(dir, m.g, s, signature);
  return dir;
}

void write_text(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::trunc) << text; }

std::string npy(const std::string& name, const Tensor& t) {
  const std::string path = path_in_dir(name);
  write_npy(path, t);
  return path;
}

}  // namespace

TEST_CASE("cli: run-graph runs a saved model to the session's bits", "[cli]") {
  const std::string model = saved_tiny_model("tiny_model");
  const Tensor in = Tensor::from_values<float>(Shape{2, 3}, {0.1f, -2.f, 3.5f, 1e-3f, 7.f, -0.f});
  TinyModel m;
  Session s(m.g);
  s.run({}, {}, {m.init});
  const Tensor want = s.run({{m.x, in}}, m.y);

  const std::string out = path_in_dir("scores.npy");
  fs::remove(out);
  Result r = run_cli("run-graph " + model + " --in features=" + npy("in.npy", in) + " --out " + out);
  INFO(r.err);
  REQUIRE(r.status == 0);
  const Tensor got = read_npy(out);
  REQUIRE(got.shape() == want.shape());
  CHECK(std::memcmp(got.raw_data(), want.raw_data(), want.nbytes()) == 0);

  // Printed by signature name; a node may be fed and fetched by its reference too.
  r = run_cli("run-graph " + model + " --in x:0=" + npy("in.npy", in) + " --fetch scores --fetch matmul");
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, Contains("scores: ") && Contains("matmul: "));
  CHECK_THAT(r.out, Contains(want.to_string(100)));

  r = run_cli("run-graph " + model + " --in features=random:4,3:7 --fetch scores --out scores=" + out);
  CHECK(r.status == 0);
  CHECK(read_npy(out).shape() == Shape{4, 2});
}

TEST_CASE("cli: graph summarises, draws and prints a saved model", "[cli]") {
  const std::string model = saved_tiny_model("tiny_model_graph");
  Result r = run_cli("graph " + model);
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, Contains("nodes: 8") && Contains("MatMul x1") && Contains("variables: 1 (6 values)") &&
                        Contains("input features: x:0 float [?,3]") && Contains("output scores: logits:0 float [?,2]"));

  r = run_cli("graph " + model + " --dot");
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, Contains("digraph dagrad {") && Contains("label=\"matmul\\nMatMul\"") &&
                        Contains("[style=dashed]") && Contains("label=\"float [?,2]\""));

  r = run_cli("graph " + model + " --json");
  REQUIRE(r.status == 0);
  const LoadedGraph from_cli = graph_from_json(r.out, "stdout");
  CHECK(from_cli.graph->num_nodes() == 8);
  CHECK(r.out == read_text(model + "/graph.json"));
  // A graph file alone works too.
  r = run_cli("graph " + model + "/graph.json");
  CHECK(r.status == 0);
  CHECK_THAT(r.out, Contains("nodes: 8"));
}

TEST_CASE("cli: run-graph and graph refuse bad models and arguments", "[cli]") {
  const std::string model = saved_tiny_model("tiny_model_bad");
  check_error(run_cli("run-graph " + path_in_dir("no_such_model")), "does not exist");
  check_error(run_cli("graph " + path_in_dir("no_such_model.json")), "no_such_model.json");
  check_error(run_cli("run-graph " + model + " --in nowhere=zeros:1,3"), "no node 'nowhere'");
  check_error(run_cli("run-graph " + model + " --in features=zeros:1,4"), "");
  check_error(run_cli("run-graph " + model + " --in features=zeros:1,3 --in x=zeros:1,3"), "another --in feeds");
  check_error(run_cli("run-graph " + model + " --in features=zeros:1,3 --fetch nothing"), "no node 'nothing'");
  check_error(run_cli("run-graph " + model + " --in features=zeros:1,3 --out other=" + path_in_dir("o.npy")),
              "not fetched");
  check_usage(run_cli("run-graph " + model + " --in features"), "--in");
  check_usage(run_cli("run-graph"), "MODEL");
  check_usage(run_cli("graph " + model + " --dot --json"), "excludes");
  check_usage(run_cli("run-graph " + model + " --in features=zeros:1,3 --fetch scores --fetch matmul --out " +
                      path_in_dir("o.npy")),
              "name the fetch");

  const std::string no_outputs = saved_tiny_model("tiny_model_no_outputs", {.inputs = {{"features", "x"}}});
  check_error(run_cli("run-graph " + no_outputs + " --in features=zeros:1,3"), "--fetch");

  // A damaged graph file is named; a hostile one never crashes.
  write_text(model + "/graph.json",
             "{\"format\": \"dagrad graph\", \"format_version\": 1, \"nodes\": [{\"name\": \"a\", "
             "\"op\": \"Identity\", \"inputs\": [\"a:0\"]}]}");
  check_error(run_cli("run-graph " + model + " --in features=zeros:1,3"), "graph.json");
  check_error(run_cli("graph " + model + " --dot"), "not defined before this node");
}
