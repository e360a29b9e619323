// train_cnn's output through the built binary: plain progress lines when stderr is not a terminal,
// --quiet, --metrics as CSV and JSON (and a write that fails), --eval-only under another
// --optimizer than the checkpoint's, and --device cuda refused before the dataset is read.
#include <catch2/catch.hpp>

#include <algorithm>
#include <sstream>

#include <nlohmann/json.hpp>

#include <dagrad/dagrad.hpp>

#include "examples/example_process.hpp"

using namespace dagrad::testing;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

// 8 training images in batches of 4 (2 steps an epoch), tested on 4.
struct TinyRun {
  ExampleDir dir;
  explicit TinyRun(const std::string& name) : dir(name) {
    write_idx_split(dir.path, "train", 8, 1);
    write_idx_split(dir.path, "t10k", 4, 2);
  }
  Result run(std::vector<std::string> args) const {
    args.insert(args.end(), {"--data", dir.path.string(), "--batch-size", "4", "--plot", ""});
    return run_program(DAGRAD_TRAIN_CNN_PATH, args, dir.path);
  }
  std::string file(const std::string& name) const { return (dir.path / name).string(); }
};

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::vector<std::string> split(const std::string& line, char sep) {
  std::vector<std::string> parts;
  std::size_t begin = 0;
  while (true) {
    const std::size_t end = line.find(sep, begin);
    parts.push_back(line.substr(begin, end - begin));
    if (end == std::string::npos) return parts;
    begin = end + 1;
  }
}

// "test accuracy 0.7500" from an epoch line, as printed (4 decimals).
std::string printed(const std::string& out, const std::string& what) {
  const std::size_t at = out.rfind(what + " ");
  return at == std::string::npos ? "" : out.substr(at + what.size() + 1, 6);
}

}  // namespace

TEST_CASE("train_cnn: progress in a log file is plain lines, and --quiet prints the result only", "[examples]") {
  TinyRun t("progress_lines");
  const Result r = t.run({"--epochs", "2"});
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  REQUIRE(r.status == 0);
  CHECK(r.err.find('\r') == std::string::npos);  // no redraws in a file
  CHECK_THAT(r.err, Contains("epoch 1/2: 4/8 images  ") && Contains("epoch 2/2: 4/8 images  "));
  CHECK(lines_of(r.err).size() == 2);
  CHECK_THAT(r.out, StartsWith("training on 8 images") && Contains("epoch 1/2: loss "));

  const Result quiet = t.run({"--epochs", "2", "--quiet"});
  INFO("quiet stdout: " << quiet.out << "\nquiet stderr: " << quiet.err);
  REQUIRE(quiet.status == 0);
  CHECK(quiet.err.empty());
  const auto lines = lines_of(quiet.out);
  REQUIRE(lines.size() == 1);
  CHECK_THAT(lines[0], StartsWith("epoch 2/2: loss ") && Contains("test accuracy"));
  // The same seed gives the same result line, bar the timing.
  CHECK(printed(quiet.out, "test accuracy") == printed(r.out, "test accuracy"));
}

TEST_CASE("train_cnn: --metrics writes every epoch as CSV or JSON, or fails naming the file", "[examples]") {
  TinyRun t("metrics");
  const std::string csv = t.file("m.csv"), json = t.file("m.json");
  const Result r = t.run({"--epochs", "2", "--metrics", csv});
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  REQUIRE(r.status == 0);
  const auto rows = lines_of(read_text(csv));
  REQUIRE(rows.size() == 3);
  CHECK(rows[0] == "epoch,step,train_loss,train_accuracy,test_loss,test_accuracy,images_per_second,seconds");
  for (int e = 1; e <= 2; ++e) {
    const auto cells = split(rows[static_cast<std::size_t>(e)], ',');
    REQUIRE(cells.size() == 8);
    CHECK(cells[0] == std::to_string(e));
    CHECK(cells[1] == std::to_string(2 * e));  // 2 steps an epoch
    for (const auto& cell : cells) CHECK_FALSE(cell.empty());
    CHECK(std::stod(cells[6]) > 0);
  }
  // The file's numbers are the printed ones, unrounded.
  char accuracy[16];
  std::snprintf(accuracy, sizeof accuracy, "%.4f", std::stod(split(rows[2], ',')[5]));
  CHECK(accuracy == printed(r.out, "test accuracy"));

  REQUIRE(t.run({"--epochs", "2", "--metrics", json}).status == 0);
  const nlohmann::json doc = nlohmann::json::parse(read_text(json));
  REQUIRE(doc.at("epochs").size() == 2);
  CHECK(doc["epochs"][1]["epoch"] == 2);
  CHECK(doc["epochs"][1]["step"] == 4);
  CHECK(doc["epochs"][1]["test_accuracy"].get<double>() == std::stod(split(rows[2], ',')[5]));
  CHECK(doc["epochs"][0]["images_per_second"].get<double>() > 0);

  const Result bad = t.run({"--metrics", t.file("m.txt")});
  CHECK(bad.status == 2);
  CHECK_THAT(bad.err, Contains("--metrics: must end in .csv or .json, got '" + t.file("m.txt") + "'"));
  if (fs::exists("/dev/full")) {
    // A device keeps its name: write_file writes it in place, and the failure names it.
    fs::create_symlink("/dev/full", t.dir.path / "full.csv");
    const Result full = t.run({"--epochs", "1", "--metrics", t.file("full.csv")});
    CHECK(full.status == 1);
    CHECK_THAT(full.err, Contains("error: ") && Contains("full.csv"));
  }
}

TEST_CASE("train_cnn: a resumed run's metrics keep the earlier epochs, without their timings", "[examples]") {
  TinyRun t("metrics_resume");
  const std::string ckpt = t.file("ckpt"), csv = t.file("m.csv");
  REQUIRE(t.run({"--epochs", "1", "--save", ckpt}).status == 0);
  const Result r = t.run({"--epochs", "2", "--resume", ckpt, "--metrics", csv});
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  REQUIRE(r.status == 0);
  const auto rows = lines_of(read_text(csv));
  REQUIRE(rows.size() == 3);
  const auto first = split(rows[1], ','), second = split(rows[2], ',');
  CHECK(first[0] == "1");
  CHECK(first[6].empty());  // measured by the first process, not this one
  CHECK_FALSE(first[5].empty());
  CHECK(second[0] == "2");
  CHECK_FALSE(second[6].empty());
}

TEST_CASE("train_cnn: --eval-only restores a checkpoint whatever --optimizer says", "[examples]") {
  TinyRun t("eval_other_optimizer");
  const std::string adam = t.file("adam"), sgd = t.file("sgd");
  REQUIRE(t.run({"--epochs", "1", "--save", adam}).status == 0);
  REQUIRE(t.run({"--epochs", "1", "--save", sgd, "--optimizer", "sgd", "--lr", "0.01"}).status == 0);
  // Momentum's and Adam's slots are in neither checkpoint of the other optimiser.
  for (const auto& [ckpt, optimizer] : {std::pair{adam, "momentum"}, std::pair{sgd, "adam"}}) {
    for (const char* how : {"--load", "--resume"}) {
      const Result r = t.run({how, ckpt, "--eval-only", "--optimizer", optimizer});
      INFO(how << " " << ckpt << " --optimizer " << optimizer << "\nstdout: " << r.out << "\nstderr: " << r.err);
      CHECK(r.status == 0);
      CHECK_THAT(r.out, Contains("test loss ") && Contains("test accuracy "));
    }
  }
}

TEST_CASE("train_cnn: --device cuda without a device fails before the dataset is read", "[examples]") {
  dagrad::op_registry();  // registers the backends and their device runtimes
  if (dagrad::device_available(dagrad::Device::cuda())) {
    WARN("skipped: this machine has a CUDA device, so --device cuda is not refused");
    return;
  }
  ExampleDir dir("no_device");
  // The dataset directory does not exist: reading it first would say so instead.
  const Result r =
      run_program(DAGRAD_TRAIN_CNN_PATH, {"--device", "cuda", "--data", (dir.path / "none").string()}, dir.path);
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  CHECK(r.status == 1);
  CHECK_THAT(r.err, StartsWith("error: no CUDA device available (asked for cuda:0)"));
  CHECK(r.out.empty());
}
