// train_cnn --export-model / --load MODEL --eval-only through the built binary: the exported model,
// run from its saved graph alone, evaluates to the same loss and accuracy as the code-built model
// with the same weights; a saved model is refused where training needs a checkpoint.
#include <catch2/catch.hpp>

#include <dagrad/core/saved_model.hpp>

#include "examples/example_process.hpp"

using namespace dagrad::testing;
using Catch::Matchers::Contains;

namespace {

// The "test loss ... test accuracy ..." line of an --eval-only run.
std::string eval_line(const std::string& out) {
  const std::size_t at = out.find("test loss ");
  return at == std::string::npos ? "(none)" : out.substr(at, out.find('\n', at) - at);
}

}  // namespace

TEST_CASE("train_cnn: an exported model evaluates from its graph as the code-built model does", "[examples]") {
  ExampleDir dir{"export"};
  write_idx_split(dir.path, "train", 40, 1);
  write_idx_split(dir.path, "t10k", 12, 2);
  const fs::path model = dir.path / "model", checkpoint = dir.path / "ckpt";
  const std::vector<std::string> common = {"--data", dir.path.string(), "--batch-size", "4", "--plot", ""};
  auto with = [&](std::vector<std::string> extra) {
    extra.insert(extra.end(), common.begin(), common.end());
    return extra;
  };
  const Result trained =
      run_program(DAGRAD_TRAIN_CNN_PATH,
                  with({"--epochs", "1", "--save", checkpoint.string(), "--export-model", model.string()}), dir.path);
  INFO(trained.err);
  REQUIRE(trained.status == 0);
  CHECK_THAT(trained.out, Contains("exported the inference model to"));
  REQUIRE(fs::exists(model / "model.json"));

  // The exported graph is the inference part only: no optimiser, gradients or initialiser.
  const dagrad::Model loaded = dagrad::load_model(model.string());
  for (int id = 0; id < loaded.graph->num_nodes(); ++id) {
    const std::string& op = loaded.graph->node(id).op();
    INFO(loaded.graph->node(id).name);
    CHECK(op != "ApplyAdam");
    CHECK(op != "Assign");
    CHECK(op.find("Grad") == std::string::npos);
  }
  CHECK(loaded.signature.outputs.at("logits") == "dense2/BiasAdd:0");

  const Result from_model =
      run_program(DAGRAD_TRAIN_CNN_PATH, with({"--load", model.string(), "--eval-only"}), dir.path);
  INFO(from_model.err);
  REQUIRE(from_model.status == 0);
  CHECK_THAT(from_model.out, Contains("evaluated the saved model"));
  const Result from_code =
      run_program(DAGRAD_TRAIN_CNN_PATH, with({"--load", checkpoint.string(), "--eval-only"}), dir.path);
  REQUIRE(from_code.status == 0);
  CHECK(eval_line(from_model.out) != "(none)");
  CHECK(eval_line(from_model.out) == eval_line(from_code.out));

  const Result train_from_model =
      run_program(DAGRAD_TRAIN_CNN_PATH, with({"--load", model.string(), "--epochs", "1"}), dir.path);
  CHECK(train_from_model.status == 1);
  CHECK_THAT(train_from_model.err, Contains("is a saved model"));
}
