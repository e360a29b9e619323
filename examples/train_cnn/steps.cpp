// Steps: feeding each tower its rows, and the data-parallel sums in a fixed order.
#include "steps.hpp"

#include <dagrad/core/error.hpp>

namespace train_cnn {

using namespace dagrad;

Steps::Steps(const Options& o, const Job& job, const std::optional<ShardPlan>& plan, std::int64_t train_images)
    : job_(job), plan_(plan) {
  batches_ = plan_ ? train_images / o.batch_size : BatchSampler(train_images, o.batch_size, o.seed).num_batches();
  if (batches_ == 0) {
    invalid_argument("--data-parallel: the ", train_images, " training images hold no full batch of ", o.batch_size,
                     " (--batch-size)");
  }
}

void Steps::run(Session& session, const Model& m, const ImageDataset& train, const std::vector<std::int64_t>& rows,
                Progress& p, Profiler* profiler) {
  FeedMap feeds;
  std::vector<Output> fetches;
  for (std::size_t k = 0; k < m.towers.size(); ++k) {
    const Tower& t = m.towers[k];
    const ImageDataset part =
        plan_ ? gather(train, shard_rows(rows, static_cast<std::int64_t>(k))) : gather(train, rows);
    feeds[t.images] = part.images;
    feeds[t.labels] = part.labels;
    fetches.insert(fetches.end(), {t.loss, t.accuracy});
  }
  RunStats stats;
  const auto out = session.run(feeds, fetches, {m.step}, &stats);
  if (profiler != nullptr) profiler->add(stats.profile);
  const auto rows_per_tower = static_cast<double>(plan_ ? plan_->shard_rows : static_cast<std::int64_t>(rows.size()));
  for (std::size_t i = 0; i < out.size(); i += 2) {
    const double loss = out[i].data<float>()[0], accuracy = out[i + 1].data<float>()[0];
    if (plan_) {
      kept_.insert(kept_.end(), {loss, accuracy});
    } else {
      p.loss_sum += loss * rows_per_tower;
      p.correct += accuracy * rows_per_tower;
    }
    local_loss_sum_ += loss * rows_per_tower;
    local_seen_ += rows_per_tower;
  }
  p.seen += static_cast<std::int64_t>(rows.size());
}

void Steps::fold(Progress& p) {
  if (!plan_) return;
  const std::vector<double> all = job_.all_gather(kept_);
  const std::size_t per_process = kept_.size(), per_step = 2 * static_cast<std::size_t>(plan_->local_shards());
  const auto rows = static_cast<double>(plan_->shard_rows);
  for (std::size_t step = 0; step < per_process; step += per_step) {
    for (std::size_t process = 0; process < static_cast<std::size_t>(job_.size()); ++process) {
      for (std::size_t i = 0; i < per_step; i += 2) {
        p.loss_sum += all[process * per_process + step + i] * rows;
        p.correct += all[process * per_process + step + i + 1] * rows;
      }
    }
  }
  kept_.clear();
}

double Steps::running_loss(const Progress& p) const {
  if (!plan_) return p.loss_sum / static_cast<double>(p.seen);
  return local_seen_ > 0 ? local_loss_sum_ / local_seen_ : 0.0;
}

std::vector<std::int64_t> Steps::shard_rows(const std::vector<std::int64_t>& rows, std::int64_t k) const {
  const auto first = rows.begin() + plan_->first_row() + k * plan_->shard_rows;
  return {first, first + plan_->shard_rows};
}

}  // namespace train_cnn
