// The training steps of an epoch: whole batches, the last one partial, on this process; or,
// data-parallel, this process's micro-shards of each full global batch (the partial one cannot
// be cut into equal shards: dropped). A data-parallel step keeps its shards' losses and
// accuracies; fold() adds every process's, in (step, global shard) order, to the progress: the
// same sums, bit for bit, at any process count.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include <dagrad/autodiff/data_parallel.hpp>
#include <dagrad/core/dataset.hpp>
#include <dagrad/core/profile.hpp>
#include <dagrad/core/session.hpp>

#include "job.hpp"
#include "model.hpp"
#include "options.hpp"
#include "training_state.hpp"

namespace train_cnn {

class Steps {
 public:
  // InvalidArgument when data-parallel and the training set holds no full batch.
  Steps(const Options& o, const Job& job, const std::optional<dagrad::ShardPlan>& plan, std::int64_t train_images);

  std::int64_t batches_per_epoch() const { return batches_; }

  // One step on the global batch of `rows` of the training set.
  void run(dagrad::Session& session, const Model& m, const dagrad::ImageDataset& train,
           const std::vector<std::int64_t>& rows, Progress& p, dagrad::Profiler* profiler);

  // Data-parallel: every process's kept numbers into `p` (a collective: every process calls it
  // at the same points). Alone: nothing to do.
  void fold(Progress& p);

  // The loss the progress bar shows: the epoch's so far; data-parallel, over this process's own
  // rows since the epoch (or the run) began, which needs no collective.
  double running_loss(const Progress& p) const;
  void start_epoch() { local_loss_sum_ = local_seen_ = 0; }

 private:
  // Rows of local shard k of the global batch `rows`.
  std::vector<std::int64_t> shard_rows(const std::vector<std::int64_t>& rows, std::int64_t k) const;

  const Job& job_;
  std::optional<dagrad::ShardPlan> plan_;
  std::int64_t batches_ = 0;
  std::vector<double> kept_;  // (loss, accuracy) per step and local shard, since the last fold
  double local_loss_sum_ = 0, local_seen_ = 0;
};

}  // namespace train_cnn
