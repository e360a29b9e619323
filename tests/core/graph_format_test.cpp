// Saved graphs: a graph built from every case of every registered op round-trips node by node
// (attributes bit for bit) and runs to the same bits after loading; the graph-only ops, special
// floats and devices by hand; base64.
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <limits>
#include <set>

#include <dagrad/core/base64.hpp>
#include <dagrad/core/graph_format.hpp>
#include <dagrad/dagrad.hpp>

#include "support/graph_compare.hpp"
#include "support/temp_dir.hpp"

using namespace dagrad;
using dagrad::testing::graph_difference;
using dagrad::testing::same_attr;
using dagrad::testing::same_tensor_bits;

namespace {

// One case of an op as a graph: inputs are Consts; ref inputs are variables that `init` assigns.
struct CaseGraph {
  std::unique_ptr<Graph> g = std::make_unique<Graph>();
  std::vector<Output> init, fetch;
};

CaseGraph case_graph(const OpDef& def, const OpCase& c, DType dtype, std::uint64_t seed) {
  CaseGraph cg;
  Graph& g = *cg.g;
  const std::vector<Tensor> inputs = make_case_inputs(c, dtype, seed);
  std::vector<DType> dtypes;
  for (const Tensor& t : inputs) dtypes.push_back(t.dtype());
  AttrMap completed = c.attrs;
  complete_attrs(def, completed, dtypes);
  const auto args = flat_input_args(def, completed);
  std::vector<Output> ins, variables;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Output value = ops::constant(g, inputs[i]);
    if (!args[i]->is_ref) {
      ins.push_back(value);
      continue;
    }
    const Output variable = ops::variable(g, inputs[i].shape(), inputs[i].dtype());
    cg.init.push_back(ops::assign(g, variable, value));
    ins.push_back(variable);
    variables.push_back(variable);
  }
  const Node& node = g.add_node(def.name, ins, c.attrs, def.name);
  for (int k = 0; k < node.num_outputs(); ++k) cg.fetch.push_back(g.output(node.id, k));
  for (const Output& v : variables) cg.fetch.push_back(ops::identity(g, v));  // read after the op ran
  return cg;
}

// The outputs with the same node ids and indices in another graph.
std::vector<Output> in_graph(const Graph& g, const std::vector<Output>& outputs) {
  std::vector<Output> mapped;
  for (const Output& o : outputs) mapped.push_back(g.output(o.node, o.index));
  return mapped;
}

std::vector<Tensor> run_on_cpu(const Graph& g, const std::vector<Output>& init, const std::vector<Output>& fetch) {
  Session session(g);
  if (!init.empty()) session.run({}, init);
  std::vector<Tensor> results;
  for (const Output& f : fetch) results.push_back(session.run({}, f));  // one at a time: updates run once each
  return results;
}

}  // namespace

TEST_CASE("graph format: every op's cases round-trip node by node and run to the same bits", "[graph_format]") {
  std::set<std::string> covered;
  int graphs = 0;
  for (const OpDef* def : op_registry().list()) {
    if (!def->cases) continue;
    const std::vector<OpCase> cases = def->cases();
    for (std::size_t k = 0; k < cases.size(); ++k) {
      std::vector<DType> dtypes = cases[k].dtypes.empty() ? def->kernel_dtypes() : cases[k].dtypes;
      if (dtypes.empty()) dtypes = {DType::Float32};
      for (DType dtype : dtypes) {
        INFO(def->name << " case " << k << " (" << cases[k].label << ") in " << dtype_name(dtype));
        const CaseGraph original = case_graph(*def, cases[k], dtype, 100 + k);
        const std::string text = graph_to_json(*original.g);
        const LoadedGraph loaded = graph_from_json(text, "case graph");
        REQUIRE(graph_difference(*original.g, *loaded.graph) == "");
        CHECK(graph_to_json(*loaded.graph) == text);  // saving the loaded graph writes the same file
        for (int id = 0; id < loaded.graph->num_nodes(); ++id) covered.insert(loaded.graph->node(id).op());
        ++graphs;
        // The loaded graph computes the same bits: outputs and the variables a stateful op wrote.
        const auto want = run_on_cpu(*original.g, original.init, original.fetch);
        const auto got =
            run_on_cpu(*loaded.graph, in_graph(*loaded.graph, original.init), in_graph(*loaded.graph, original.fetch));
        REQUIRE(got.size() == want.size());
        for (std::size_t i = 0; i < got.size(); ++i) {
          INFO("output " << i);
          CHECK(same_tensor_bits(got[i], want[i]));
        }
      }
    }
  }
  INFO(graphs << " graphs");
  CHECK(graphs > 100);
  // The graph-only ops are covered by the hand-built graphs below.
  const std::set<std::string> by_hand = {"Placeholder", "NoOp"};
  for (const OpDef* def : op_registry().list()) {
    INFO(def->name);
    CHECK((covered.count(def->name) + by_hand.count(def->name)) > 0);
  }
}

TEST_CASE("graph format: placeholders, control edges, devices and special values round-trip", "[graph_format]") {
  Graph g;
  const Output x = ops::placeholder(g, DType::Float32, Shape{-1, 3}, "x");
  ops::placeholder(g, DType::BFloat16, Shape{}, "name:with:colons");
  // Values JSON numbers cannot hold, in every floating dtype: NaN payloads, -0, infinities, subnormals.
  const std::vector<std::uint16_t> half_bits = {0x7e01, 0xfc00, 0x7c00, 0x8000, 0x0001, 0x3c00};
  const std::vector<std::uint32_t> float_bits = {0x7fc00001u, 0xff800000u, 0x80000000u, 0x00000001u, 0x3f800000u};
  const std::vector<std::uint64_t> double_bits = {0x7ff0000000000001ull, 0xfff8000000000000ull, 0x8000000000000000ull,
                                                  0x0000000000000001ull};
  Tensor h = Tensor::empty(DType::Half, Shape{6}), b = Tensor::empty(DType::BFloat16, Shape{2, 3});
  std::memcpy(h.raw_data(), half_bits.data(), 12);
  std::memcpy(b.raw_data(), half_bits.data(), 12);
  Tensor f = Tensor::empty(DType::Float32, Shape{5}), d = Tensor::empty(DType::Float64, Shape{4, 1});
  std::memcpy(f.raw_data(), float_bits.data(), 20);
  std::memcpy(d.raw_data(), double_bits.data(), 32);
  const std::vector<Tensor> values = {
      h,
      b,
      f,
      d,
      Tensor::from_values<std::int64_t>(
          Shape{3}, {std::numeric_limits<std::int64_t>::min(), -1, std::numeric_limits<std::int64_t>::max()}),
      Tensor::from_values<std::int32_t>(Shape{2}, {std::numeric_limits<std::int32_t>::min(), 7}),
      Tensor::from_values<bool>(Shape{1, 2, 1}, {true, false}),
      Tensor::zeros(DType::Float32, Shape{0, 4})};
  std::vector<const Node*> consts;
  for (const Tensor& v : values) consts.push_back(&ops::constant(g, v).op());
  const Output y = ops::identity(g, x, "y");
  const Node& after = ops::group(g, consts, "after_consts");
  const Node& z = g.add_node("Identity", {y}, {}, "z", {after.id, y.node});
  const NodeDevices devices = {{y.node, "cuda:1"}, {z.id, "cpu"}};

  const std::string text = graph_to_json(g, devices);
  const LoadedGraph loaded = graph_from_json(text, "hand-built");
  CHECK(graph_difference(g, *loaded.graph) == "");
  CHECK(loaded.devices == devices);
  CHECK(graph_to_json(*loaded.graph, loaded.devices) == text);
  CHECK(loaded.graph->node(z.id).control_inputs == std::vector<int>{after.id, y.node});
  CHECK(loaded.graph->find("name:with:colons") != nullptr);

  // And through a file: the session runs it with the control edges.
  dagrad::testing::TempDir dir;
  const std::string path = (dir.path / "g.json").string();
  save_graph(g, path, devices);
  const LoadedGraph from_file = load_graph(path);
  CHECK(graph_difference(g, *from_file.graph) == "");
  Session session(*from_file.graph);
  const Tensor in = Tensor::from_values<float>(Shape{1, 3}, {1, -2, 3});
  CHECK(same_tensor_bits(session.run({{from_file.graph->output(x.node), in}}, from_file.graph->output(z.id)), in));
}

TEST_CASE("graph format: float attributes keep every bit, integers every digit", "[graph_format]") {
  const std::vector<double> specials = {0.0,
                                        -0.0,
                                        0.1,
                                        -1.0 / 3,
                                        std::numeric_limits<double>::denorm_min(),
                                        std::numeric_limits<double>::max(),
                                        std::numeric_limits<double>::lowest(),
                                        std::numeric_limits<double>::infinity(),
                                        -std::numeric_limits<double>::infinity(),
                                        std::bit_cast<double>(std::uint64_t{0x7ff8000000000000}),
                                        std::bit_cast<double>(std::uint64_t{0xfff0000000000abc}),
                                        std::bit_cast<double>(std::uint64_t{0x7ff0000000000001})};
  std::vector<AttrValue> values = {AttrValue(specials),
                                   AttrValue(std::vector<std::int64_t>{INT64_MIN, 0, INT64_MAX}),
                                   AttrValue(std::int64_t{INT64_MIN}),
                                   AttrValue(true),
                                   AttrValue(std::string("SAME")),
                                   AttrValue(DType::BFloat16),
                                   AttrValue(Shape{-1, 0, 5}),
                                   AttrValue(std::vector<double>{})};
  for (double s : specials) values.push_back(AttrValue(s));
  for (const AttrValue& v : values) {
    const std::string text = attr_to_json_text(v);
    INFO(text);
    CHECK(same_attr(attr_from_json_text(text, "attr"), v));
  }
  CHECK(attr_to_json_text(AttrValue(-0.0)) == "{\"float\":-0.0}");
  CHECK(attr_to_json_text(AttrValue(std::numeric_limits<double>::infinity())) == "{\"float\":\"0x7ff0000000000000\"}");
  CHECK(attr_to_json_text(AttrValue(std::int64_t{3})) == "{\"int\":3}");
}

TEST_CASE("base64: RFC 4648 vectors, every length, and only canonical text", "[graph_format]") {
  const std::vector<std::pair<std::string, std::string>> rfc = {{"", ""},
                                                                {"f", "Zg=="},
                                                                {"fo", "Zm8="},
                                                                {"foo", "Zm9v"},
                                                                {"foob", "Zm9vYg=="},
                                                                {"fooba", "Zm9vYmE="},
                                                                {"foobar", "Zm9vYmFy"}};
  for (const auto& [plain, encoded] : rfc) {
    CHECK(base64_encode(plain.data(), plain.size()) == encoded);
    std::string back(plain.size(), '\0');
    base64_decode(encoded, back.data(), back.size(), "test");
    CHECK(back == plain);
  }
  std::string bytes;
  for (int n = 0; n < 40; ++n) {
    const std::string text = base64_encode(bytes.data(), bytes.size());
    CHECK(text.size() == base64_length(bytes.size()));
    std::string back(bytes.size(), '\0');
    base64_decode(text, back.data(), back.size(), "test");
    CHECK(back == bytes);
    bytes += static_cast<char>(n * 37 + 200);
  }
  char out[3];
  CHECK_THROWS_WITH(base64_decode("Zm9", out, 2, "t"), Catch::Contains("3 base64 characters, expected 4"));
  CHECK_THROWS_WITH(base64_decode("Zm9=", out, 3, "t"), Catch::Contains("not in the alphabet"));
  CHECK_THROWS_WITH(base64_decode("Zm9w", out, 2, "t"), Catch::Contains("must be '=' padding"));
  CHECK_THROWS_WITH(base64_decode("Zm9=", out, 2, "t"), Catch::Contains("non-zero unused bits"));
  CHECK_THROWS_WITH(base64_decode("Zm!v", out, 3, "t"), Catch::Contains("'!'"));
}
