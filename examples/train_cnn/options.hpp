// train_cnn's command line: the options, their ranges, and the exit status of a usage error.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <dagrad/core/dataset.hpp>

namespace train_cnn {

struct Options {
  int epochs = 3;
  std::int64_t batch_size = 32;
  int threads = 0;
  double lr = 0.001;
  std::string optimizer = "adam";
  std::uint64_t seed = 1;
  std::string device = "cpu";
  std::string data = dagrad::kFashionMnistDir;
  std::string save, load, resume, plot = "train_cnn.svg";
  std::string export_model;     // write the inference graph, variables and signature here (a saved model)
  std::int64_t save_every = 0;  // also save every N steps (0: at the end of each epoch only)
  bool eval_only = false;
  std::int64_t limit = 0;  // train on the first N images only (0: all)
  std::string profile;     // time each op of the training steps; Chrome trace file ('' for none)
  // The layers' compute dtype: "float32", or "bfloat16" (mixed precision: float32 master weights,
  // optimiser and loss).
  std::string precision = "float32";
  bool quiet = false;   // no progress, no per-epoch lines: the final result and errors only
  std::string metrics;  // per-epoch metrics as FILE.csv or FILE.json ('' for none)
  // Data-parallel training (an MPI job, `mpirun -np N train_cnn --data-parallel`): each global
  // batch of batch_size rows is cut into `shards` micro-shards whatever N, N dividing `shards`.
  bool data_parallel = false;
  std::int64_t shards = 4;
  // With data_parallel: the gradients exchanged in packs of at most this many bytes (DataParallel::
  // bytes_per_pack; 0: all in one), each pack's exchange overlapping the backward pass after it.
  std::int64_t bytes_per_pack = 0;
};

// Parses the command line into `options`. Returns nothing to go on, or the status to exit with:
// 0 after --help, 2 after a usage error (one "error: ..." line and a hint on stderr).
std::optional<int> parse_options(int argc, char** argv, Options& options);

}  // namespace train_cnn
