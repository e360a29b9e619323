// Saved models: a trained CNN saved as graph + variables + signature runs from the directory alone
// to the same logits bit for bit; damaged or mismatched models are refused by name.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <set>

#include <dagrad/core/saved_model.hpp>
#include <dagrad/core/subgraph.hpp>

#include "support/error_of.hpp"
#include "support/graph_compare.hpp"
#include "support/small_cnn.hpp"
#include "support/temp_dir.hpp"

using namespace dagrad;
using Catch::Matchers::Contains;
using dagrad::testing::error_of;
using dagrad::testing::TempDir;
namespace fs = std::filesystem;

namespace {

// Images and labels from a fixed linear congruential sequence.
FeedMap random_batch(const testing::SmallCnn& m, std::int64_t batch, std::uint32_t seed) {
  Tensor images = Tensor::empty(DType::Float32, Shape{batch, 28, 28, 1});
  Tensor labels = Tensor::empty(DType::Int32, Shape{batch});
  std::uint32_t state = seed;
  const auto next = [&] { return (state = state * 1664525u + 1013904223u) >> 8; };
  for (std::int64_t i = 0; i < images.num_elements(); ++i)
    images.data<float>()[i] = static_cast<float>(next() % 256) / 255.f;
  for (std::int64_t i = 0; i < batch; ++i) labels.data<std::int32_t>()[i] = static_cast<std::int32_t>(next() % 10);
  return {{m.images, images}, {m.labels, labels}};
}

Signature cnn_signature(const testing::SmallCnn& m) {
  return {.inputs = {{"images", m.images.name()}}, .outputs = {{"logits", m.logits.name()}, {"loss", m.loss.name()}}};
}

void write_text(const fs::path& path, const std::string& text) { std::ofstream(path, std::ios::trunc) << text; }

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

TEST_CASE("saved model: a trained CNN runs from its directory to the same logits bit for bit", "[saved_model]") {
  testing::SmallCnn m(3, 4, "adam", 0.01);
  Session s(m.g);
  s.run({}, {}, {m.init});
  for (std::uint32_t step = 0; step < 3; ++step) s.run(random_batch(m, 16, step), {}, {m.step});
  TempDir dir;
  const std::string path = (dir.path / "model").string();
  save_model(path, m.g, s, cnn_signature(m), {}, {.step = 3, .metadata = {{"k", "v"}}});
  CHECK(fs::exists(dir.path / "model" / "model.json"));
  CHECK(fs::exists(dir.path / "model" / "graph.json"));
  CHECK(fs::exists(dir.path / "model" / "variables" / "manifest.json"));

  const Model model = load_model(path);
  CHECK(testing::graph_difference(m.g, *model.graph) == "");
  CHECK(model.info.step == 3);
  CHECK(model.info.metadata.at("k") == "v");
  CHECK(model.input("images").node == m.images.node);
  CHECK(model.output("logits").node == m.logits.node);
  CHECK(model.output(m.loss.name()).node == m.loss.node);  // a node reference works as well

  const FeedMap batch = random_batch(m, 8, 99);
  const Tensor want = s.run({{m.images, batch.at(m.images)}}, m.logits);
  const Tensor got = model.session->run({{model.input("images"), batch.at(m.images)}}, model.output("logits"));
  CHECK(testing::same_tensor_bits(got, want));
  // The training step came along too: one more step in each gives the same variables.
  s.run(batch, {}, {m.step});
  model.session->run({{model.input("images"), batch.at(m.images)}, {model.input("labels"), batch.at(m.labels)}}, {},
                     {&model.graph->node(m.step->id)});
  for (const std::string& name : variable_names(m.g)) {
    INFO(name);
    CHECK(testing::same_tensor_bits(model.session->variables().get(name), s.variables().get(name)));
  }

  // Saving again replaces the model whole.
  save_model(path, m.g, s, {.inputs = {{"x", "images"}}, .outputs = {}});
  CHECK(load_model(path).signature.inputs.at("x") == "images");
  for (const auto& entry : fs::directory_iterator(dir.path)) CHECK(entry.path().filename() == "model");
}

TEST_CASE("saved model: signatures must name the graph's outputs; inputs must be placeholders", "[saved_model]") {
  testing::SmallCnn m(1, 2, "sgd", 0.1);
  Session s(m.g);
  s.run({}, {}, {m.init});
  TempDir dir;
  const std::string path = (dir.path / "m").string();
  CHECK_THAT(error_of([&] {
               save_model(path, m.g, s, {.inputs = {{"x", "nowhere:0"}}});
             }),
             Contains("input 'x'") && Contains("no node 'nowhere:0'"));
  CHECK_THAT(error_of([&] {
               save_model(path, m.g, s, {.inputs = {{"x", m.logits.name()}}});
             }),
             Contains("inputs must be Placeholder outputs"));
  CHECK_THAT(error_of([&] { save_model(path, m.g, s, {.outputs = {{"y", "images:3"}}}); }), Contains("asked for 3"));
  CHECK(!fs::exists(path));

  Session fresh(m.g);  // uninitialised variables: nothing is written
  CHECK_THAT(error_of([&] { save_model(path, m.g, fresh, cnn_signature(m)); }), Contains("uninitialized"));
  CHECK(!fs::exists(path));

  fs::create_directories(dir.path / "home");
  write_text(dir.path / "home" / "notes.txt", "mine");
  CHECK_THAT(error_of([&] { save_model((dir.path / "home").string(), m.g, s, cnn_signature(m)); }),
             Contains("is not a model") && Contains("refusing"));
  CHECK(read_text(dir.path / "home" / "notes.txt") == "mine");
}

TEST_CASE("saved model: damaged directories are refused naming the file", "[saved_model]") {
  testing::SmallCnn m(1, 2, "sgd", 0.1);
  Session s(m.g);
  s.run({}, {}, {m.init});
  TempDir dir;
  const fs::path path = dir.path / "m";
  const auto fresh_copy = [&] {
    fs::remove_all(path);
    save_model(path.string(), m.g, s, cnn_signature(m));
  };
  const auto load_error = [&] { return error_of([&] { load_model(path.string()); }); };

  CHECK_THAT(error_of([&] { load_model((dir.path / "none").string()); }), Contains("does not exist"));
  fresh_copy();
  fs::remove(path / "model.json");
  CHECK_THAT(load_error(), Contains("has no model.json"));

  fresh_copy();
  const std::string manifest = read_text(path / "model.json");
  write_text(path / "model.json",
             "{\"format\": \"dagrad model\", \"format_version\": 2, \"inputs\": {}, \"outputs\": {}}");
  CHECK_THAT(load_error(), Contains("model.json") && Contains("format_version 2"));
  write_text(path / "model.json",
             "{\"format\": \"dagrad model\", \"format_version\": 1, \"inputs\": {\"a\": 1}, \"outputs\": {}}");
  CHECK_THAT(load_error(), Contains("model.json") && Contains("inputs \"a\" must be a string"));
  write_text(path / "model.json",
             "{\"format\": \"dagrad model\", \"format_version\": 1, \"inputs\": {}, \"outputs\": {\"z\": \"zz\"}}");
  CHECK_THAT(load_error(), Contains("model.json") && Contains("output 'z'") && Contains("no node 'zz'"));
  write_text(path / "model.json", manifest + "x");
  CHECK_THAT(load_error(), Contains("model.json") && Contains("not valid JSON"));

  fresh_copy();
  const std::string graph = read_text(path / "graph.json");
  write_text(path / "graph.json", graph.substr(0, graph.size() / 2));
  CHECK_THAT(load_error(), Contains("graph.json") && Contains("not valid JSON"));

  fresh_copy();
  fs::remove_all(path / "variables" / "conv1");
  CHECK_THAT(load_error(), Contains("conv1/kernel"));
}

TEST_CASE("saved model: the inference subgraph of a training graph keeps names and logits", "[saved_model]") {
  testing::SmallCnn m(5, 3, "momentum", 0.05);
  Session s(m.g);
  s.run({}, {}, {m.init});
  s.run(random_batch(m, 8, 1), {}, {m.step});
  const std::unique_ptr<Graph> sub = extract_subgraph(m.g, {m.logits});
  std::set<std::string> ops;
  for (int id = 0; id < sub->num_nodes(); ++id) {
    const Node& n = sub->node(id);
    ops.insert(n.op());
    const Node* original = m.g.find(n.name);
    REQUIRE(original != nullptr);
    CHECK(original->op() == n.op());
    CHECK(original->output_shapes == n.output_shapes);
  }
  CHECK(sub->num_nodes() < m.g.num_nodes() / 2);
  CHECK(ops.count("VariableV2") == 1);
  CHECK(ops.count("ApplyMomentum") == 0);
  CHECK(ops.count("Assign") == 0);
  CHECK(sub->find("labels") == nullptr);  // logits do not need the labels

  TempDir dir;
  save_model((dir.path / "m").string(), *sub, s,
             {.inputs = {{"images", "images"}}, .outputs = {{"logits", m.logits.name()}}});
  const Model model = load_model((dir.path / "m").string());
  CHECK(variable_names(*model.graph).size() == 4);  // conv1 and dense, kernel and bias; no momentum slots
  const Tensor images = random_batch(m, 5, 2).at(m.images);
  CHECK(testing::same_tensor_bits(model.session->run({{model.input("images"), images}}, model.output("logits")),
                                  s.run({{m.images, images}}, m.logits)));
  CHECK_THROWS_WITH(extract_subgraph(*sub, {m.logits}), Contains("not of this graph"));
}

TEST_CASE("saved model: a save that fails leaves the previous model whole", "[saved_model]") {
  testing::SmallCnn m(2, 2, "sgd", 0.1);
  Session s(m.g);
  s.run({}, {}, {m.init});
  TempDir dir;
  const std::string path = (dir.path / "m").string();
  save_model(path, m.g, s, cnn_signature(m));
  const std::string graph_before = read_text(dir.path / "m" / "graph.json");

  // Another graph whose variable has no value: the save fails while writing the variables.
  Graph other;
  const Output x = ops::placeholder(other, DType::Float32, Shape{-1, 2}, "images");
  ops::identity(other, ops::variable(other, Shape{2}, DType::Float32, "v"), "y");
  Session empty(other);
  CHECK_THAT(error_of([&] {
               save_model(path, other, empty, {.inputs = {{"images", x.name()}}});
             }),
             Contains("uninitialized"));
  CHECK(read_text(dir.path / "m" / "graph.json") == graph_before);
  const Model model = load_model(path);
  CHECK(model.signature.outputs.count("logits") == 1);
  for (const auto& entry : fs::directory_iterator(dir.path)) CHECK(entry.path().filename() == "m");  // no leftovers
}
