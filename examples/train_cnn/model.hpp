// train_cnn's model, a LeNet-style CNN:
//   conv 5x5 (32) -> relu -> max-pool -> conv 5x5 (64) -> relu -> max-pool -> dense 128 (relu) -> dense 10
// built once over the whole batch, or, data-parallel, once per local micro-shard over the same
// variables, with the optimiser's step.
#pragma once

#include <cstdint>
#include <vector>

#include <dagrad/core/dataset.hpp>
#include <dagrad/core/session.hpp>
#include <dagrad/ops/layers.hpp>

#include "job.hpp"
#include "options.hpp"

namespace train_cnn {

// One copy of the model: over the whole batch, or over one micro-shard of it (data-parallel).
// The placeholders take any number of rows, so any copy also evaluates batches of 1000.
struct Tower {
  dagrad::Output images, labels, logits, loss, accuracy;

  Tower(dagrad::Graph& g, dagrad::layers::VariableSet& vars, const Options& o);
};

struct Model {
  dagrad::Graph g;
  dagrad::layers::VariableSet vars;
  // One tower, or one per local micro-shard over the same variables (data-parallel). towers[0],
  // built first, has the plain model's node names: it evaluates and is what --export-model saves.
  std::vector<Tower> towers;
  const dagrad::Node* step = nullptr;
  const dagrad::Node* init = nullptr;

  Model(const Options& o, const Job& job, std::int64_t local_shards);

  const Tower& main() const { return towers[0]; }
  dagrad::FeedMap feed(const dagrad::ImageDataset& d) const {
    return {{main().images, d.images}, {main().labels, d.labels}};
  }
};

}  // namespace train_cnn
