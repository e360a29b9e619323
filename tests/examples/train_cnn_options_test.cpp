// train_cnn's exit statuses through the built binary: usage errors (2) with readable ranges,
// errors (1) with one "error:" line for an empty, missing or wrongly sized dataset and output that
// cannot be written; --profile's report and trace.
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <iterator>

#include "examples/example_process.hpp"

using namespace dagrad::testing;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

Result train_cnn(const std::vector<std::string>& args, const ExampleDir& dir, const fs::path& stdout_path = {}) {
  return run_program(DAGRAD_TRAIN_CNN_PATH, args, dir.path, stdout_path);
}

void check_usage_error(const Result& r, const std::string& fragment) {
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  CHECK(r.status == 2);
  CHECK_THAT(r.err, StartsWith("error: ") && Contains(fragment) && Contains("train_cnn --help"));
  CHECK(r.err.size() < 300);  // no 300-digit limits of double
}

void check_error(const Result& r, const std::string& fragment) {
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Contains("error: ") && Contains(fragment));
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') >= 1);
}

}  // namespace

TEST_CASE("train_cnn: out-of-range options are usage errors with readable ranges", "[examples]") {
  ExampleDir dir("options");
  check_usage_error(train_cnn({"--batch-size", "0"}, dir), "--batch-size: must be between 1 and 1000000, got 0");
  check_usage_error(train_cnn({"--epochs=-1"}, dir), "--epochs: must be between 0 and 1000000, got -1");
  check_usage_error(train_cnn({"--epochs", "-1"}, dir), "-1");
  check_usage_error(train_cnn({"--epochs", "99999999999999999999"}, dir), "--epochs: must be an integer between 0");
  check_usage_error(train_cnn({"--threads", "100000"}, dir), "--threads: must be between 0 and 1024");
  check_usage_error(train_cnn({"--lr", "nan"}, dir), "--lr: must be a positive finite number, got 'nan'");
  check_usage_error(train_cnn({"--save-every", "x"}, dir), "--save-every: must be an integer");
  check_usage_error(train_cnn({"--precision", "float16"}, dir), "--precision: float16 not in {float32,bfloat16}");
  check_usage_error(train_cnn({"--no-such-option"}, dir), "--no-such-option");
  check_usage_error(train_cnn({"--eval-only"}, dir), "--eval-only needs --load DIR or --resume DIR");
  check_usage_error(train_cnn({"--load", "a", "--resume", "b"}, dir), "--load");
  const Result help = train_cnn({"--help"}, dir);
  CHECK(help.status == 0);
  CHECK_THAT(help.out, Contains("--save-every") && Contains("--resume"));
}

TEST_CASE("train_cnn: --data-parallel's usage errors name the values", "[examples]") {
  ExampleDir dir("data_parallel_options");
  check_usage_error(train_cnn({"--shards", "2"}, dir), "--shards requires --data-parallel");
#ifdef DAGRAD_TRAIN_CNN_MPI
  check_usage_error(train_cnn({"--data-parallel", "--batch-size", "30", "--shards", "4"}, dir),
                    "--shards: the global batch of 30 rows (--batch-size) does not split into 4 micro-shards of "
                    "equal size");
  check_usage_error(train_cnn({"--data-parallel", "--shards", "0"}, dir), "--shards: must be between 1 and 1000000");
  check_usage_error(train_cnn({"--data-parallel", "--eval-only", "--load", "x"}, dir),
                    "--eval-only excludes --data-parallel");
  const Result help = train_cnn({"--help"}, dir);
  CHECK_THAT(help.out, Contains("--data-parallel") && Contains("--shards"));
#else
  check_usage_error(train_cnn({"--data-parallel"}, dir), "--data-parallel: this train_cnn was built without MPI");
#endif
}

TEST_CASE("train_cnn: an empty, missing or wrongly sized dataset is an error naming it", "[examples]") {
  ExampleDir dir("empty_dataset");
  write_idx_split(dir.path, "train", 0, 1);
  write_idx_split(dir.path, "t10k", 4, 2);
  check_error(train_cnn({"--data", dir.path.string(), "--epochs", "1", "--plot", ""}, dir),
              "dataset '" + dir.path.string() + "': the 'train' split has no images");
  write_idx_split(dir.path, "train", 4, 1);
  write_idx_split(dir.path, "t10k", 0, 2);
  check_error(train_cnn({"--data", dir.path.string(), "--epochs", "1", "--plot", ""}, dir),
              "the 't10k' split has no images");
  check_error(train_cnn({"--data", (dir.path / "nowhere").string()}, dir), "dataset file not found");
  write_idx_split(dir.path, "t10k", 4, 2, 5);
  check_error(train_cnn({"--data", dir.path.string(), "--epochs", "1", "--plot", ""}, dir),
              "the 't10k' images have shape [4,5,5,1]; this model takes 28x28 images of one channel");
}

TEST_CASE("train_cnn: output that cannot be written is an error, not a success", "[examples]") {
  if (!fs::exists("/dev/full")) return;
  ExampleDir dir("dev_full");
  write_idx_split(dir.path, "train", 4, 1);
  write_idx_split(dir.path, "t10k", 2, 2);
  const std::vector<std::string> tiny = {"--data", dir.path.string(), "--epochs", "1", "--batch-size", "4"};
  std::vector<std::string> args = tiny;
  args.insert(args.end(), {"--plot", "/dev/full"});
  check_error(train_cnn(args, dir), "/dev/full");
  args = tiny;
  args.insert(args.end(), {"--plot", ""});
  check_error(train_cnn(args, dir, "/dev/full"), "cannot write to standard output");
}

TEST_CASE("train_cnn: --profile prints the steps' ops and writes their Chrome trace, or fails naming the file",
          "[examples]") {
  ExampleDir dir("profile");
  write_idx_split(dir.path, "train", 8, 1);
  write_idx_split(dir.path, "t10k", 2, 2);
  const std::string trace = (dir.path / "trace.json").string();
  const std::vector<std::string> tiny = {"--data", dir.path.string(), "--epochs", "1", "--batch-size",
                                         "4",      "--plot",          ""};
  std::vector<std::string> args = tiny;
  args.insert(args.end(), {"--profile", trace});
  const Result r = train_cnn(args, dir);
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  CHECK(r.status == 0);
  CHECK_THAT(r.out, Contains("training steps, op by op:\nprofile: 2 runs") && Contains("Conv2DBackpropFilterV2") &&
                        Contains("wrote the first 2 steps as a Chrome trace to " + trace));
  std::ifstream in(trace);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK_THAT(text, StartsWith("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[") && Contains("\"cat\":\"_FusedConv2D\""));
  if (fs::exists("/dev/full")) {
    args = tiny;
    args.insert(args.end(), {"--profile", "/dev/full"});
    check_error(train_cnn(args, dir), "/dev/full");
  }
}
