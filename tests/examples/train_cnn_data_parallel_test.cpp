// train_cnn --data-parallel as a job of one process (no mpirun: MPI's singleton), on synthetic
// data: the partial last batch is dropped and said so, a checkpoint records the micro-shards and
// is refused by runs with others or without --data-parallel (and the reverse), and errors name
// the rank. The jobs of several processes are tests/mpi's (mpi_train_cnn_*).
#ifdef DAGRAD_TRAIN_CNN_MPI

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>

#include "examples/example_process.hpp"

using namespace dagrad::testing;
using Catch::Matchers::Contains;

namespace {

// 20 training images (2 full batches of 8 and 4 left over), 4 test images.
struct Setup {
  ExampleDir dir{"data_parallel"};
  Setup() {
    // Under AddressSanitizer, Open MPI leaks its own memory (tests/mpi/CMakeLists.txt says more):
    // the train_cnn processes started here keep every check but the leak check, as tests/mpi's do.
    static const bool leaks_unchecked = [] {
      const char* options = std::getenv("ASAN_OPTIONS");
      const std::string before = options != nullptr && *options != '\0' ? std::string(options) + ":" : "";
      return ::setenv("ASAN_OPTIONS", (before + "detect_leaks=0").c_str(), 1) == 0;
    }();
    REQUIRE(leaks_unchecked);
    write_idx_split(dir.path, "train", 20, 1);
    write_idx_split(dir.path, "t10k", 4, 2);
  }
  // The options in `extra`, then the defaults it does not replace.
  Result run(std::vector<std::string> extra) const {
    const std::vector<std::pair<std::string, std::string>> defaults = {
        {"--data", dir.path.string()}, {"--epochs", "1"}, {"--batch-size", "8"}, {"--plot", ""}};
    for (const auto& [flag, value] : defaults) {
      if (std::find(extra.begin(), extra.end(), flag) == extra.end()) extra.insert(extra.end(), {flag, value});
    }
    return run_program(DAGRAD_TRAIN_CNN_PATH, extra, dir.path);
  }
};

}  // namespace

TEST_CASE("train_cnn --data-parallel alone: drops the partial batch and says so", "[examples][data_parallel]") {
  Setup s;
  const fs::path ckpt = s.dir.path / "ckpt";
  const Result r = s.run({"--data-parallel", "--shards", "2", "--save", ckpt.string()});
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, Contains("training on 20 images") &&
                        Contains("; data-parallel: 1 process x 2 of 2 micro-shards of 4 images, the last 4 images "
                                 "of each epoch dropped (a partial batch)") &&
                        Contains("epoch 1/1: loss ") && Contains("variables (step 2) to " + ckpt.string()));
  CHECK_THAT(read_text(ckpt / "manifest.json"), Contains("\"train_cnn/shards\": \"2\""));
  // Without --data-parallel the partial batch is trained on, and no shard count recorded.
  const fs::path plain = s.dir.path / "plain";
  REQUIRE(s.run({"--save", plain.string()}).status == 0);
  const std::string manifest = read_text(plain / "manifest.json");
  CHECK_THAT(manifest, Contains("\"step\": 3"));
  CHECK_THAT(manifest, !Contains("train_cnn/shards"));
}

TEST_CASE("train_cnn --data-parallel: a checkpoint is resumed with its micro-shards only",
          "[examples][data_parallel]") {
  Setup s;
  const fs::path dp = s.dir.path / "dp", plain = s.dir.path / "plain";
  REQUIRE(s.run({"--data-parallel", "--shards", "2", "--save", dp.string()}).status == 0);
  REQUIRE(s.run({"--save", plain.string()}).status == 0);
  Result r = s.run({"--data-parallel", "--shards", "4", "--resume", dp.string()});
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Contains("error: rank 0 of 1: checkpoint '" + dp.string() +
                             "' was trained with --data-parallel --shards 2 but this run has --data-parallel "
                             "--shards 4; resume with the same micro-shards"));
  r = s.run({"--resume", dp.string()});
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Contains("error: checkpoint '" + dp.string() +
                             "' was trained with --data-parallel --shards 2 but this run has no --data-parallel"));
  r = s.run({"--data-parallel", "--shards", "2", "--resume", plain.string()});
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Contains("was trained with no --data-parallel but this run has --data-parallel --shards 2"));
  // --load takes the variables of any checkpoint, and starts from step 0.
  r = s.run({"--data-parallel", "--shards", "2", "--load", plain.string()});
  INFO(r.err);
  CHECK(r.status == 0);
  CHECK_THAT(r.out, Contains("restored variables from " + plain.string()));
}

TEST_CASE("train_cnn --data-parallel: errors name the rank, and too few images for a batch is one",
          "[examples][data_parallel]") {
  Setup s;
  Result r = s.run({"--data-parallel", "--batch-size", "32"});
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Contains("error: rank 0 of 1: --data-parallel: the 20 training images hold no full batch of 32 "
                             "(--batch-size)"));
  r = s.run({"--data-parallel", "--resume", (s.dir.path / "nowhere").string()});
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Contains("error: rank 0 of 1: ") && Contains("nowhere"));
}

#endif  // DAGRAD_TRAIN_CNN_MPI
