// Checkpoints: round trips with step and metadata, the swap into place, and every way a
// checkpoint can be damaged (killed mid-save, truncated, corrupt, mismatched) refused by name
// before any variable changes.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <dagrad/autodiff/optimizers.hpp>
#include <dagrad/core/checkpoint.hpp>
#include <dagrad/dagrad.hpp>
#include <dagrad/ops/layers.hpp>

#include "support/temp_dir.hpp"

using namespace dagrad;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

using dagrad::testing::TempDir;

std::string read_all(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_all(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

void replace_in_file(const fs::path& path, const std::string& from, const std::string& to) {
  std::string text = read_all(path);
  const std::size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  write_all(path, text.replace(at, from.size(), to));
}

// Three variables of three dtypes, initialised to `base`, base+1, ...
struct Vars {
  Graph g;
  layers::VariableSet set{1};
  const Node* init = nullptr;
  explicit Vars(float base, std::int64_t kernel_cols = 3) {
    set.create(g, "layer/kernel", Tensor::full(DType::Float32, Shape{2, kernel_cols}, base));
    set.create(g, "layer/bias", Tensor::full(DType::Float32, Shape{kernel_cols}, base + 1).cast(DType::BFloat16));
    set.create(g, "counter", Tensor::full(DType::Int64, Shape{}, base + 2), false);
    init = &set.initializer(g);
  }
};

double value_of(Session& s, const std::string& name) { return s.variables().get(name).value_as_double(0); }

// A saved checkpoint of Vars(1) at step 7 and a session of Vars(5) to restore it into.
struct Saved {
  TempDir tmp;
  fs::path dir = tmp.path / "ckpt";
  Vars source{1}, target{5};
  Session saver{source.g}, restorer{target.g};
  Saved() {
    saver.run({}, {}, {source.init});
    restorer.run({}, {}, {target.init});
    save_checkpoint(saver, source.g, dir.string(), {.step = 7, .metadata = {{"epoch", "2"}}});
  }
  std::string restore_error() {
    try {
      restore_checkpoint(restorer, target.g, dir.string());
    } catch (const Error& e) {
      // Nothing changed: every variable still has its own initial value.
      CHECK(value_of(restorer, "layer/kernel") == 5);
      CHECK(value_of(restorer, "layer/bias") == 6);
      CHECK(value_of(restorer, "counter") == 7);
      return e.what();
    }
    return "(no error)";
  }
};

}  // namespace

TEST_CASE("checkpoint: a round trip restores values, step and metadata", "[checkpoint]") {
  Saved c;
  const std::string manifest = read_all(c.dir / "manifest.json");
  CHECK_THAT(manifest, Contains("\"version\": 1") && Contains("\"layer/kernel\"") && Contains("\"bfloat16\"") &&
                           Contains("\"crc32\"") && Contains("\"step\": 7"));
  CHECK(fs::exists(c.dir / "layer" / "kernel.npy"));
  const CheckpointInfo info = restore_checkpoint(c.restorer, c.target.g, c.dir.string());
  CHECK(info.step == 7);
  CHECK(info.metadata == std::map<std::string, std::string>{{"epoch", "2"}});
  CHECK(value_of(c.restorer, "layer/kernel") == 1);
  CHECK(c.restorer.variables().get("layer/bias").dtype() == DType::BFloat16);
  CHECK(value_of(c.restorer, "layer/bias") == 2);
  CHECK(value_of(c.restorer, "counter") == 3);
}

TEST_CASE("checkpoint: a new save replaces the old one whole and leaves nothing beside it", "[checkpoint]") {
  Saved c;
  c.saver.variables().set("layer/kernel", Tensor::full(DType::Float32, Shape{2, 3}, 9.0));
  save_checkpoint(c.saver, c.source.g, c.dir.string() + "/", {.step = 8});  // a trailing slash names the same directory
  CHECK(restore_checkpoint(c.restorer, c.target.g, c.dir.string()).step == 8);
  CHECK(value_of(c.restorer, "layer/kernel") == 9);
  std::vector<std::string> beside;
  for (const auto& e : fs::directory_iterator(c.tmp.path)) beside.push_back(e.path().filename().string());
  CHECK(beside == std::vector<std::string>{"ckpt"});
}

TEST_CASE("checkpoint: a save that fails leaves the previous checkpoint and no temporary", "[checkpoint]") {
  Saved c;
  Graph g;
  layers::VariableSet more(1);
  more.create(g, "layer/kernel", Tensor::full(DType::Float32, Shape{2, 3}, 4.0));
  more.create(g, "never_initialised", Tensor::zeros(DType::Float32, Shape{2}));
  Session s(g);
  s.variables().set("layer/kernel", Tensor::full(DType::Float32, Shape{2, 3}, 4.0));
  CHECK_THROWS_WITH(save_checkpoint(s, g, c.dir.string()), Contains("never_initialised"));
  CHECK(restore_checkpoint(c.restorer, c.target.g, c.dir.string()).step == 7);
  CHECK(value_of(c.restorer, "layer/kernel") == 1);
  CHECK(std::distance(fs::directory_iterator(c.tmp.path), fs::directory_iterator()) == 1);
}

TEST_CASE("checkpoint: a save killed before its swap is ignored, then cleaned up", "[checkpoint]") {
  Saved c;
  // What `kill -9` during a save leaves: a temporary directory of a dead process with a
  // manifest-less, half-written checkpoint. INT_MAX is above any pid_max, so no process has it.
  const fs::path abandoned = c.tmp.path / ("ckpt.tmp-" + std::to_string(INT_MAX) + "-0");
  fs::create_directories(abandoned / "layer");
  write_all(abandoned / "layer" / "kernel.npy", "\x93NUMPY half");
  // A live process's save in progress (this one's pid) must not be touched.
  const fs::path live = c.tmp.path / ("ckpt.tmp-" + std::to_string(getpid()) + "-999");
  fs::create_directories(live);
  CHECK(restore_checkpoint(c.restorer, c.target.g, c.dir.string()).step == 7);
  CHECK(value_of(c.restorer, "layer/kernel") == 1);
  save_checkpoint(c.saver, c.source.g, c.dir.string(), {.step = 9});
  CHECK_FALSE(fs::exists(abandoned));
  CHECK(fs::exists(live));
  CHECK(restore_checkpoint(c.restorer, c.target.g, c.dir.string()).step == 9);
}

TEST_CASE("checkpoint: damaged files are refused by name before any variable changes", "[checkpoint]") {
  Saved c;
  const fs::path bias = c.dir / "layer" / "bias.npy";
  SECTION("truncated") {
    const std::string bytes = read_all(bias);
    write_all(bias, bytes.substr(0, bytes.size() - 3));
    CHECK_THAT(c.restore_error(), Contains(bias.string()) && Contains("variable 'layer/bias'") &&
                                      Contains("has " + std::to_string(bytes.size() - 3) + " bytes") &&
                                      Contains("manifest says " + std::to_string(bytes.size())) &&
                                      Contains("truncated"));
  }
  SECTION("longer than the manifest says") {
    write_all(bias, read_all(bias) + "extra");
    CHECK_THAT(c.restore_error(), Contains(bias.string()) && Contains("variable 'layer/bias'"));
  }
  SECTION("one byte flipped") {
    std::string bytes = read_all(bias);
    bytes.back() ^= 0x01;
    write_all(bias, bytes);
    CHECK_THAT(c.restore_error(),
               Contains(bias.string()) && Contains("variable 'layer/bias'") && Contains("corrupt: crc32"));
  }
  SECTION("missing") {
    fs::remove(bias);
    CHECK_THAT(c.restore_error(), Contains("has no file 'bias.npy' for variable 'layer/bias'"));
  }
  SECTION("no manifest: an unfinished or pre-manifest checkpoint") {
    fs::remove(c.dir / "manifest.json");
    CHECK_THAT(c.restore_error(), Contains(c.dir.string()) && Contains("has no manifest.json"));
  }
  SECTION("another format version") {
    replace_in_file(c.dir / "manifest.json", "\"version\": 1", "\"version\": 2");
    CHECK_THAT(c.restore_error(), Contains("format version 2; this dagrad reads version 1"));
  }
  SECTION("a manifest that promises more bytes than the shape can need") {
    replace_in_file(c.dir / "manifest.json", "\"bytes\": ", "\"bytes\": 99999999");
    CHECK_THAT(c.restore_error(), Contains("promises") && Contains("needs at most"));
  }
  SECTION("a file name that leaves the directory") {
    replace_in_file(c.dir / "manifest.json", "\"file\": \"counter.npy\"", "\"file\": \"../counter.npy\"");
    CHECK_THAT(c.restore_error(), Contains("names file '../counter.npy'; expected 'counter.npy'"));
  }
  SECTION("not JSON, or nested deeper than any manifest") {
    write_all(c.dir / "manifest.json", "{\"format\": ");
    CHECK_THAT(c.restore_error(), Contains("is not valid JSON"));
    write_all(c.dir / "manifest.json", std::string(100000, '[') + std::string(100000, ']'));
    CHECK_THAT(c.restore_error(), Contains("must hold a JSON object"));
  }
  SECTION("a field of the wrong type") {
    replace_in_file(c.dir / "manifest.json", "\"step\": 7", "\"step\": \"seven\"");
    CHECK_THAT(c.restore_error(), Contains("field \"step\" must be an integer"));
  }
}

TEST_CASE("checkpoint: a graph that does not match is refused by name", "[checkpoint]") {
  Saved c;
  SECTION("shape") {
    Vars wider(5, 4);
    Session s(wider.g);
    CHECK_THROWS_WITH(restore_checkpoint(s, wider.g, c.dir.string()),
                      Contains("holds shape [2,3] but variable 'layer/kernel' has shape [2,4]"));
  }
  SECTION("dtype") {
    Graph g;
    layers::VariableSet set(1);
    set.create(g, "counter", Tensor::full(DType::Int32, Shape{}, 1.0));
    Session s(g);
    CHECK_THROWS_WITH(restore_checkpoint(s, g, c.dir.string()),
                      Contains("holds int64 but variable 'counter' is int32"));
  }
  SECTION("a variable the checkpoint lacks") {
    Graph g;
    layers::VariableSet set(1);
    set.create(g, "other", Tensor::full(DType::Float32, Shape{}, 1.0));
    Session s(g);
    CHECK_THROWS_WITH(restore_checkpoint(s, g, c.dir.string()), Contains("Key other not found in checkpoint"));
  }
}

TEST_CASE("checkpoint: a directory that is not a checkpoint is never replaced", "[checkpoint]") {
  TempDir tmp;
  write_all(tmp.path / "notes.txt", "precious");
  Vars v(1);
  Session s(v.g);
  s.run({}, {}, {v.init});
  CHECK_THROWS_WITH(save_checkpoint(s, v.g, tmp.path.string()),
                    Contains("is not a checkpoint") && Contains("refusing"));
  CHECK(read_all(tmp.path / "notes.txt") == "precious");
  write_all(tmp.path / "file", "x");
  CHECK_THROWS_WITH(save_checkpoint(s, v.g, (tmp.path / "file").string()), Contains("is not a directory"));
}

TEST_CASE("checkpoint: the optimiser's slots and Adam's beta powers are saved and restored", "[checkpoint]") {
  Graph g;
  layers::VariableSet vars(3);
  Output w = vars.create(g, "w", Tensor::from_values<float>(Shape{2}, {1.f, -2.f}));
  const Node& step =
      minimize(g, ops::reduce_sum_all(g, ops::mul(g, w, w)), vars, {.name = "adam", .learning_rate = 0.1});
  const Node& init = vars.initializer(g);
  const std::vector<std::string> names = variable_names(g);
  for (const char* slot : {"w/Adam", "w/Adam_1", "beta1_power", "beta2_power"}) {
    CHECK(std::find(names.begin(), names.end(), slot) != names.end());
  }
  TempDir tmp;
  Session a(g), b(g);
  a.run({}, {}, {&init});
  b.run({}, {}, {&init});
  for (int i = 0; i < 3; ++i) a.run({}, {}, {&step});
  save_checkpoint(a, g, (tmp.path / "adam").string(), {.step = 3});
  restore_checkpoint(b, g, (tmp.path / "adam").string());
  a.run({}, {}, {&step});
  b.run({}, {}, {&step});  // the same next step only if every slot came back
  for (const std::string& name : names) {
    const Tensor& x = a.variables().get(name);
    const Tensor& y = b.variables().get(name);
    INFO(name);
    CHECK(std::memcmp(x.raw_data(), y.raw_data(), x.nbytes()) == 0);
  }
}
