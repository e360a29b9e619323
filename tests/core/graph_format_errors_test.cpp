// Saved graphs from hostile files: each malformed field is an Error naming the file, the node
// and the field, never a crash, a hang or a graph the API could not have built.
#include <catch2/catch.hpp>

#include <functional>

#include <nlohmann/json.hpp>

#include <dagrad/core/graph_format.hpp>
#include <dagrad/dagrad.hpp>

#include "support/error_of.hpp"
#include "support/temp_dir.hpp"

using namespace dagrad;
using Catch::Matchers::Contains;
using dagrad::testing::error_of;
using nlohmann::json;

namespace {

// x (Placeholder float [2, 2]), c (Const float [2, 2]), sum = AddV2(x, c), done (NoOp after sum).
json valid_graph() {
  Graph g;
  const Output x = ops::placeholder(g, DType::Float32, Shape{2, 2}, "x");
  const Output c = ops::constant(g, Tensor::full(DType::Float32, Shape{2, 2}, 1.5), "c");
  const Node& sum = g.add_node("AddV2", {x, c}, {}, "sum");
  g.add_node("NoOp", {}, {}, "done", {sum.id});
  return json::parse(graph_to_json(g));
}

json& node(json& root, const std::string& name) {
  for (json& n : root["nodes"]) {
    if (n["name"] == name) return n;
  }
  static json none;
  FAIL("no node " << name);
  return none;
}

struct Hostile {
  std::string what;
  std::function<void(json&)> mutate;
  std::vector<std::string> message;  // every part must appear in the error
};

}  // namespace

TEST_CASE("graph format: the valid file used below loads", "[graph_format]") {
  const LoadedGraph loaded = graph_from_json(valid_graph().dump(), "valid.json");
  CHECK(loaded.graph->num_nodes() == 4);
}

TEST_CASE("graph format: every malformed field is refused by name", "[graph_format]") {
  const std::vector<Hostile> cases = {
      {"format", [](json& r) { r["format"] = "dagrad checkpoint"; }, {"field \"format\"", "dagrad graph"}},
      {"newer version", [](json& r) { r["format_version"] = 2; }, {"format_version 2 is newer", "(1)"}},
      {"version type", [](json& r) { r["format_version"] = "1"; }, {"format_version\" must be a positive integer"}},
      {"no nodes", [](json& r) { r.erase("nodes"); }, {"has no field \"nodes\""}},
      {"unknown top field", [](json& r) { r["extra"] = 1; }, {"unknown field \"extra\""}},
      {"node not object", [](json& r) { r["nodes"][1] = 3; }, {"node 1: expected an object"}},
      {"empty name", [](json& r) { node(r, "c")["name"] = ""; }, {"node 1", "non-empty string"}},
      {"duplicate name", [](json& r) { node(r, "c")["name"] = "x"; }, {"node 1 ('x')", "used by an earlier node"}},
      {"unknown op",
       [](json& r) { node(r, "sum")["op"] = "Frobnicate"; },
       {"node 2 ('sum')", "Op type not registered 'Frobnicate'"}},
      {"dangling input",
       [](json& r) { node(r, "sum")["inputs"][1] = "nowhere:0"; },
       {"node 2 ('sum') input 1", "does not have"}},
      {"forward reference",
       [](json& r) { node(r, "sum")["inputs"][1] = "done:0"; },
       {"input 1", "not defined before this node"}},
      {"self reference", [](json& r) { node(r, "sum")["inputs"][0] = "sum:0"; }, {"input 0", "not defined before"}},
      {"input index",
       [](json& r) { node(r, "sum")["inputs"][0] = "x:1"; },
       {"input 0", "output 1 of 'x', which has 1"}},
      {"input without index", [](json& r) { node(r, "sum")["inputs"][0] = "x"; }, {"input 0", "\"node:index\""}},
      {"input huge index",
       [](json& r) { node(r, "sum")["inputs"][0] = "x:99999999999999999999"; },
       {"input 0", "\"node:index\""}},
      {"control dangling",
       [](json& r) { node(r, "done")["control_inputs"][0] = "later"; },
       {"control input 0", "does not have"}},
      {"control type",
       [](json& r) { node(r, "done")["control_inputs"][0] = 2; },
       {"control input 0", "expected a node name"}},
      {"wrong arity", [](json& r) { node(r, "sum")["inputs"].erase(1); }, {"node 2 ('sum')", "AddV2"}},
      {"wrong input dtype", [](json& r) { node(r, "c")["attrs"]["dtype"]["type"] = "int32"; }, {"node 1 ('c')"}},
      {"attr kind unknown",
       [](json& r) {
         node(r, "x")["attrs"]["dtype"] = {{"dtype", "float"}};
       },
       {"attribute 'dtype'", "unknown attribute kind \"dtype\""}},
      {"attr two keys", [](json& r) { node(r, "x")["attrs"]["dtype"]["int"] = 1; }, {"attribute 'dtype'", "one key"}},
      {"attr wrong kind for schema",
       [](json& r) {
         node(r, "x")["attrs"]["dtype"] = {{"int", 1}};
       },
       {"node 0 ('x')", "dtype"}},
      {"attr unknown to op",
       [](json& r) {
         node(r, "x")["attrs"]["bogus"] = {{"int", 1}};
       },
       {"node 0 ('x')", "bogus"}},
      {"int too big",
       [](json& r) { node(r, "x")["attrs"]["bogus"] = json::parse("{\"int\": 18446744073709551615}"); },
       {"attribute 'bogus' int", "int64's range"}},
      {"float string finite",
       [](json& r) {
         node(r, "x")["attrs"]["f"] = {{"float", "0x3ff0000000000000"}};
       },
       {"attribute 'f' float", "infinity or NaN"}},
      {"bad dtype",
       [](json& r) { node(r, "x")["attrs"]["dtype"]["type"] = "float8"; },
       {"attribute 'dtype' type", "unknown dtype"}},
      {"shape dim",
       [](json& r) { node(r, "x")["attrs"]["shape"]["shape"][0] = -2; },
       {"attribute 'shape' shape", "dimension 0 is -2"}},
      {"shape rank",
       [](json& r) { node(r, "x")["attrs"]["shape"]["shape"] = std::vector<int>(300, 1); },
       {"rank 300 exceeds 254"}},
      {"tensor short data",
       [](json& r) { node(r, "c")["attrs"]["value"]["tensor"]["data"] = "AAAA"; },
       {"attribute 'value' tensor", "4 base64 characters", "needs 24 (16 bytes)"}},
      {"tensor shape grown",
       [](json& r) {
         node(r, "c")["attrs"]["value"]["tensor"]["shape"] = {2, 3};
       },
       {"needs 32 (24 bytes)"}},
      {"tensor huge shape",
       [](json& r) {
         node(r, "c")["attrs"]["value"]["tensor"]["shape"] = {INT64_MAX, 4};
       },
       {"attribute 'value' tensor", "integer overflow"}},
      {"tensor vast shape",
       [](json& r) {
         node(r, "c")["attrs"]["value"]["tensor"]["shape"] = {std::int64_t{1} << 40, 1 << 20};
       },
       {"data holds 24 base64 characters", "4611686018427387904 bytes"}},
      {"tensor unknown dim",
       [](json& r) {
         node(r, "c")["attrs"]["value"]["tensor"]["shape"] = {-1, 2};
       },
       {"fully defined"}},
      {"tensor bad base64",
       [](json& r) { node(r, "c")["attrs"]["value"]["tensor"]["data"] = "!" + std::string(23, 'A'); },
       {"'!'", "not in the alphabet"}},
      {"tensor missing data",
       [](json& r) { node(r, "c")["attrs"]["value"]["tensor"].erase("data"); },
       {"attribute 'value' tensor", "no field \"data\""}},
      {"bool byte",
       [](json& r) {
         node(r, "c")["attrs"]["value"]["tensor"] = {{"dtype", "bool"}, {"shape", {2}}, {"data", "AQI="}};
       },
       {"bool element 1 has byte 2"}},
      {"device",
       [](json& r) { node(r, "sum")["device"] = "tpu:0"; },
       {"node 2 ('sum') device", "unknown device 'tpu:0'"}},
      {"device type", [](json& r) { node(r, "sum")["device"] = 0; }, {"field \"device\" must be a string"}},
      {"outputs disagree",
       [](json& r) {
         node(r, "sum")["outputs"][0]["shape"] = {2, 3};
       },
       {"node 2 ('sum') output 0", "records float [2,3]", "infers float [2,2]"}},
      {"outputs count",
       [](json& r) { node(r, "sum")["outputs"].push_back(node(r, "sum")["outputs"][0]); },
       {"records 2 outputs"}},
      {"unknown node field",
       [](json& r) { node(r, "sum")["colour"] = "red"; },
       {"node 2 ('sum')", "unknown field \"colour\""}},
      {"inputs not array", [](json& r) { node(r, "sum")["inputs"] = "x:0"; }, {"field \"inputs\" must be an array"}},
      {"too deep",
       [](json& r) { node(r, "x")["attrs"]["shape"]["shape"] = json::parse("[[[[[[1]]]]]]"); },
       {"attribute 'shape' shape"}},
  };
  for (const Hostile& h : cases) {
    INFO(h.what);
    json root = valid_graph();
    h.mutate(root);
    const std::string message = error_of([&] { graph_from_json(root.dump(), "evil.json"); });
    INFO(message);
    CHECK_THAT(message, Contains("graph 'evil.json'"));
    for (const std::string& part : h.message) CHECK_THAT(message, Contains(part));
  }
}

TEST_CASE("graph format: text that is not a graph is refused", "[graph_format]") {
  CHECK_THAT(error_of([] { graph_from_json("{\"format\": ", "t.json"); }),
             Contains("graph 't.json' is not valid JSON"));
  CHECK_THAT(error_of([] { graph_from_json("{\"format\": 1e999}", "t.json"); }), Contains("not valid JSON"));
  CHECK_THAT(error_of([] { graph_from_json("[]", "t.json"); }), Contains("expected a JSON object"));
  CHECK_THAT(error_of([] { graph_from_json(std::string(100000, '['), "t.json"); }), Contains("not valid JSON"));
  CHECK_THAT(error_of([] { graph_from_json("\"\\ud800\"", "t.json"); }), Contains("not valid JSON"));
  // Small values cost their bytes many times over in memory: their count is bounded.
  std::string many = "{\"format\": \"dagrad graph\", \"format_version\": 1, \"nodes\": [[0";
  for (int i = 0; i < (1 << 24); ++i) many += ",0";
  CHECK_THAT(error_of([&] { graph_from_json(many + "]]}", "many.json"); }),
             Contains("graph 'many.json' holds more than 16777216 JSON values"));
  dagrad::testing::TempDir dir;
  CHECK_THROWS_AS(load_graph((dir.path / "missing.json").string()), Error);
  CHECK_THAT(error_of([&] { load_graph(dir.path.string()); }), Contains(dir.path.string()));
}

TEST_CASE("graph format: saving refuses what the format cannot hold", "[graph_format]") {
  Graph g;
  ops::placeholder(g, DType::Float32, Shape{1}, "bad\xff");
  CHECK_THAT(error_of([&] { graph_to_json(g); }), Contains("UTF-8"));
  Graph h;
  ops::placeholder(h, DType::Float32, Shape{1}, "x");
  CHECK_THAT(error_of([&] { graph_to_json(h, {{0, "tpu"}}); }), Contains("unknown device 'tpu'"));
  CHECK_THAT(error_of([&] { graph_to_json(h, {{5, "cpu"}}); }), Contains("node id 5"));
  CHECK_THAT(error_of([&] { save_graph(h, "/dev/full"); }), Contains("/dev/full"));
}
