// Where a training run stands, kept in a checkpoint's metadata so that --resume continues exactly
// where a run stopped: the epoch, the batch within it, the running sums and curves, and the
// settings that must not change for the continuation to be exact.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <dagrad/core/checkpoint.hpp>

namespace train_cnn {

// A resumed run must use the same ones: they fix the batches and the updates.
struct RunSettings {
  std::string optimizer;
  double learning_rate = 0;
  std::int64_t batch_size = 0;
  std::uint64_t seed = 0;
  std::int64_t train_images = 0;
  std::string precision = "float32";
  // --data-parallel's micro-shards per batch (0: not data-parallel). Other shard counts sum other
  // partial gradients, so they give other bits; another process count gives the same.
  std::int64_t shards = 0;
};

struct Progress {
  std::int64_t epoch = 0;            // epochs finished; also the one in progress (its batch order)
  std::int64_t batch = 0;            // batches finished in that epoch
  std::int64_t step = 0;             // training steps finished in all
  double loss_sum = 0, correct = 0;  // over the `seen` images of the epoch in progress
  std::int64_t seen = 0;
  std::vector<double> train_loss, train_accuracy, test_loss, test_accuracy;  // one per finished epoch

  void start_next_epoch();
};

dagrad::CheckpointInfo checkpoint_info(const Progress& progress, const RunSettings& settings);
// The progress saved in checkpoint `dir`; throws dagrad::Error naming the checkpoint and the key
// when the metadata is missing or malformed, or was saved under other settings.
Progress progress_from_checkpoint(const dagrad::CheckpointInfo& info, const RunSettings& settings,
                                  std::int64_t batches_per_epoch, const std::string& dir);

// A checkpoint's info as bytes and back, for sending it from the process that read the checkpoint
// to the others of a data-parallel job (which need not see its directory).
std::string encode_checkpoint_info(const dagrad::CheckpointInfo& info);
dagrad::CheckpointInfo decode_checkpoint_info(const std::string& bytes);

}  // namespace train_cnn
