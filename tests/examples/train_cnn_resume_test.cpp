// train_cnn --save / --resume through the built binary: a run killed with SIGKILL once a
// checkpoint exists and then resumed ends with the same checkpoint, weights, optimiser slots and
// curves, bit for bit, as a run never interrupted; a resume under other settings or from a
// damaged checkpoint is refused by name.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <map>
#include <thread>

#include "examples/example_process.hpp"

using namespace dagrad::testing;
using Catch::Matchers::Contains;

namespace {

// 2 epochs of 4 steps (16 images in batches of 4), evaluated on 4 images.
struct ResumeSetup {
  ExampleDir dir{"resume"};
  ResumeSetup() {
    write_idx_split(dir.path, "train", 200, 1);
    write_idx_split(dir.path, "t10k", 4, 2);
  }
  // The options in `extra`, then the defaults it does not replace.
  std::vector<std::string> args(const std::vector<std::string>& extra) const {
    const std::map<std::string, std::string> defaults = {{"--data", dir.path.string()},
                                                         {"--epochs", "2"},
                                                         {"--batch-size", "4"},
                                                         {"--limit", "16"},
                                                         {"--seed", "3"},
                                                         {"--plot", ""}};
    std::vector<std::string> a = extra;
    for (const auto& [flag, value] : defaults) {
      if (std::find(extra.begin(), extra.end(), flag) == extra.end()) a.insert(a.end(), {flag, value});
    }
    return a;
  }
  Result run(const std::vector<std::string>& extra) const {
    return run_program(DAGRAD_TRAIN_CNN_PATH, args(extra), dir.path);
  }
};

// The step recorded in a checkpoint's manifest, or -1 while there is none.
std::int64_t checkpoint_step(const fs::path& dir) {
  const std::string text = read_text(dir / "manifest.json");
  const std::size_t at = text.find("\"step\": ");
  return at == std::string::npos ? -1 : std::stoll(text.substr(at + 8));
}

// Every file under `dir`, by relative path, with its bytes.
std::map<std::string, std::string> files_under(const fs::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_regular_file()) files[fs::relative(e.path(), dir).string()] = read_text(e.path());
  }
  return files;
}

}  // namespace

TEST_CASE("train_cnn: a run killed with SIGKILL and resumed ends bit for bit like an uninterrupted one",
          "[examples][resume]") {
  ResumeSetup s;
  const fs::path whole = s.dir.path / "whole", killed = s.dir.path / "killed";
  const Result uninterrupted = s.run({"--save", whole.string()});
  INFO(uninterrupted.err);
  REQUIRE(uninterrupted.status == 0);
  REQUIRE(checkpoint_step(whole) == 8);

  // Checkpoints every step; killed once the one of step 3 is there, mid-training.
  Process p(DAGRAD_TRAIN_CNN_PATH, s.args({"--save", killed.string(), "--save-every", "1"}), s.dir.path / "killed.out",
            s.dir.path / "killed.err");
  REQUIRE(p.started());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (checkpoint_step(killed) < 3 && p.running() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  INFO(read_text(s.dir.path / "killed.err"));
  REQUIRE(p.running());
  p.kill_hard();
  const int status = p.wait();
  REQUIRE(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGKILL);
  const std::int64_t killed_at = checkpoint_step(killed);
  CHECK(killed_at >= 3);
  CHECK(killed_at < 8);

  const Result resumed = s.run({"--resume", killed.string(), "--save", killed.string()});
  INFO(resumed.err);
  REQUIRE(resumed.status == 0);
  CHECK_THAT(resumed.out, Contains("resumed from " + killed.string() + " at step " + std::to_string(killed_at)));
  // Weights, optimiser slots, Adam's powers, step, curves: every byte of every file.
  const auto expected = files_under(whole), got = files_under(killed);
  CHECK(expected.size() > 20);
  for (const auto& [name, bytes] : expected) {
    INFO(name);
    CHECK(got.count(name) == 1);
    CHECK((got.count(name) == 1 && got.at(name) == bytes));
  }
  CHECK(got.size() == expected.size());
  // A save cut short by the kill left at most a temporary directory, removed by the next save.
  std::vector<std::string> beside;
  for (const auto& e : fs::directory_iterator(s.dir.path)) beside.push_back(e.path().filename().string());
  CHECK(std::none_of(beside.begin(), beside.end(),
                     [](const std::string& n) { return n.find(".tmp-") != std::string::npos; }));
}

TEST_CASE("train_cnn: --resume refuses other settings and damaged checkpoints by name", "[examples][resume]") {
  ResumeSetup s;
  const fs::path ckpt = s.dir.path / "ckpt";
  REQUIRE(s.run({"--save", ckpt.string(), "--epochs", "1"}).status == 0);

  Result r = s.run({"--resume", ckpt.string(), "--batch-size", "8"});
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Contains("error: checkpoint '" + ckpt.string() +
                             "' was trained with --batch-size 4 but this run has --batch-size 8"));
  r = s.run({"--resume", ckpt.string(), "--optimizer", "sgd"});
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Contains("was trained with --optimizer adam but this run has --optimizer sgd"));
  r = s.run({"--resume", ckpt.string(), "--precision", "bfloat16"});
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Contains("was trained with --precision float32 but this run has --precision bfloat16"));

  const fs::path kernel = ckpt / "conv2" / "kernel.npy";
  const std::string bytes = read_text(kernel);
  std::ofstream(kernel, std::ios::binary | std::ios::trunc) << bytes.substr(0, bytes.size() / 2);
  r = s.run({"--resume", ckpt.string()});
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Contains("error: checkpoint file '" + kernel.string() + "' of variable 'conv2/kernel'") &&
                        Contains("(truncated)"));
}
