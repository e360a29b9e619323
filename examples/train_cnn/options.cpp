// train_cnn's options with CLI11: readable ranges ("must be between 1 and 1000000, got 0"), and
// every parse error reported as a usage error (status 2) with an "error:" line.
#include "options.hpp"

#include <cmath>
#include <iostream>
#include <limits>

#include <CLI/CLI.hpp>

#include "job.hpp"
#include "metrics.hpp"
#include "progress.hpp"

namespace train_cnn {
namespace {

// An integer option in [lo, hi]; CLI11's own range checks print the limits of double.
template <class T>
CLI::Validator integer_in(T lo, T hi) {
  return CLI::Validator(
      [lo, hi](std::string& input) -> std::string {
        T value{};
        if (!CLI::detail::lexical_cast(input, value))
          return str("must be an integer between ", lo, " and ", hi, ", got '", input, "'");
        if (value < lo || value > hi) return str("must be between ", lo, " and ", hi, ", got ", input);
        return {};
      },
      str("in [", lo, ", ", hi, "]"));
}

CLI::Validator positive_finite() {
  return CLI::Validator(
      [](std::string& input) -> std::string {
        double value = 0;
        if (!CLI::detail::lexical_cast(input, value) || !std::isfinite(value) || value <= 0) {
          return str("must be a positive finite number, got '", input, "'");
        }
        return {};
      },
      "positive");
}

// A usage error found after parsing: the same "error:" line and hint as CLI11's.
int usage_error(const std::string& message) {
  std::cerr << "error: " << message << "\nusage: train_cnn [OPTIONS] (train_cnn --help lists them)\n";
  return 2;
}

}  // namespace

std::optional<int> parse_options(int argc, char** argv, Options& o) {
  constexpr auto kInt64Max = std::numeric_limits<std::int64_t>::max();
  CLI::App app{"Train a LeNet-style CNN on Fashion-MNIST with dagrad"};
  app.add_option("--epochs", o.epochs, "passes over the training set")
      ->check(integer_in(0, 1'000'000))
      ->capture_default_str();
  app.add_option("--batch-size", o.batch_size, "images per training step")
      ->check(integer_in<std::int64_t>(1, 1'000'000))
      ->capture_default_str();
  app.add_option("--threads", o.threads, "CPU threads (0: all cores)")
      ->check(integer_in(0, 1024))
      ->capture_default_str();
  app.add_option("--lr", o.lr, "learning rate")->check(positive_finite())->capture_default_str();
  app.add_option("--optimizer", o.optimizer, "sgd, momentum, nesterov or adam")
      ->check(CLI::IsMember({"sgd", "momentum", "nesterov", "adam"}))
      ->capture_default_str();
  app.add_option("--precision", o.precision,
                 "the layers' compute dtype: float32, or bfloat16 with float32 weights, optimiser and loss")
      ->check(CLI::IsMember({"float32", "bfloat16"}))
      ->capture_default_str();
  app.add_option("--seed", o.seed, "seed of the initial weights and the batch order")->capture_default_str();
  app.add_option("--device", o.device, "cpu or cuda[:N]")->capture_default_str();
  app.add_option("--data", o.data, "directory of the IDX files ({train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz])")
      ->capture_default_str();
  app.add_option("--save", o.save, "save a checkpoint to this directory at the end of every epoch");
  app.add_option("--save-every", o.save_every, "with --save: also save every N training steps (0: only at epoch ends)")
      ->check(integer_in<std::int64_t>(0, kInt64Max))
      ->capture_default_str();
  app.add_option("--load", o.load,
                 "restore the variables from this checkpoint, then train from step 0 or evaluate; with "
                 "--eval-only it may be a saved model (--export-model), run from its graph alone");
  app.add_option("--export-model", o.export_model,
                 "at the end, save the inference graph (images, labels -> logits, loss, accuracy), its "
                 "variables and signature to this directory: a model `dagrad run-graph` runs");
  app.add_option("--resume", o.resume,
                 "continue the run saved in this checkpoint: weights, optimiser slots, step and batch order")
      ->excludes("--load");
  app.add_flag("--eval-only", o.eval_only, "only evaluate on the test set (with --load or --resume)");
  app.add_option("--plot", o.plot, "SVG file for the loss/accuracy curves ('' for none)")->capture_default_str();
  app.add_option("--limit", o.limit, "train on the first N training images only (0: all)")
      ->check(integer_in<std::int64_t>(0, kInt64Max));
  app.add_option("--profile", o.profile,
                 "time each op of the training steps: print the ops that took the time, and write their "
                 "Chrome trace (chrome://tracing, Perfetto) to this JSON file");
  app.add_flag("--quiet", o.quiet,
               "print only the result (the last epoch's line, or the evaluation) and errors: no progress");
  app.add_option("--metrics", o.metrics,
                 "write each epoch's loss, accuracies and images/s to this .csv or .json file, rewritten whole "
                 "after every epoch")
      ->check(CLI::Validator(
          [](std::string& path) -> std::string {
            return metrics_format(path) ? std::string() : str("must end in .csv or .json, got '", path, "'");
          },
          "FILE.csv|FILE.json"));
  auto* data_parallel = app.add_flag("--data-parallel", o.data_parallel,
                                     "train on every process of an MPI job (mpirun -np N train_cnn --data-parallel; "
                                     "without mpirun a job of one): each trains S/N of the S micro-shards of every "
                                     "batch, and any N gives the same bits (the last partial batch of an epoch is "
                                     "dropped); only process 0 prints and writes files");
  data_parallel->excludes("--eval-only");
  app.add_option("--shards", o.shards,
                 "with --data-parallel: micro-shards of each batch, whatever the process count N (N must divide "
                 "it, and it must divide --batch-size)")
      ->check(integer_in<std::int64_t>(1, 1'000'000))
      ->needs(data_parallel)
      ->capture_default_str();
  app.add_option("--bytes-per-pack", o.bytes_per_pack,
                 "with --data-parallel: exchange the gradients in packs of at most this many bytes, from the last "
                 "layers back, each starting as soon as its gradients exist, while the backward pass goes on "
                 "(0: one pack); the same bits whatever the packing")
      ->check(integer_in<std::int64_t>(0, std::numeric_limits<std::int64_t>::max()))
      ->needs(data_parallel)
      ->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "error: " << e.what() << "\nusage: train_cnn [OPTIONS] (train_cnn --help lists them)\n";
    return 2;
  }
  if (o.eval_only && o.load.empty() && o.resume.empty()) {
    return usage_error("--eval-only needs --load DIR or --resume DIR");
  }
  if (o.data_parallel && !built_with_mpi()) {
    return usage_error("--data-parallel: this train_cnn was built without MPI (Debian: libopenmpi-dev)");
  }
  if (o.data_parallel && o.batch_size % o.shards != 0) {
    return usage_error(str("--shards: the global batch of ", o.batch_size, " rows (--batch-size) does not split into ",
                           o.shards, " micro-shards of equal size"));
  }
  return std::nullopt;
}

}  // namespace train_cnn
