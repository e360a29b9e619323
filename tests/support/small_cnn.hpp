// The tests' small CNN: conv 5x5 (`filters`) -> relu -> max-pool -> dense 10, with its loss,
// accuracy, one optimizer step and the variables' initializer in one graph. The layers compute in
// `compute` on float32 variables (mixed precision where `compute` is bfloat16 or half).
#pragma once

#include <cstdint>
#include <string>

#include <dagrad/autodiff/optimizers.hpp>
#include <dagrad/core/dataset.hpp>
#include <dagrad/dagrad.hpp>
#include <dagrad/ops/layers.hpp>

namespace dagrad::testing {

struct SmallCnn {
  Graph g;
  layers::VariableSet vars;
  Output images, labels, logits, loss, accuracy;
  const Node* step = nullptr;
  const Node* init = nullptr;

  SmallCnn(std::uint64_t seed, std::int64_t filters, const std::string& optimizer, double lr,
           DType compute = DType::Float32)
      : vars(seed) {
    images = ops::placeholder(g, DType::Float32, Shape{-1, 28, 28, 1}, "images");
    labels = ops::placeholder(g, DType::Int32, Shape{-1}, "labels");
    layers::Layers nn(g, vars, DType::Float32);
    Output x = nn.conv2d(compute == DType::Float32 ? images : ops::cast(g, images, compute), "conv1", filters, 5);
    x = nn.flatten(nn.max_pool(x));
    logits = nn.dense(x, "dense", 10);
    const layers::ClassifierMetrics metrics = layers::classifier_metrics(g, logits, labels);
    loss = metrics.loss;
    accuracy = metrics.accuracy;
    step = &minimize(g, loss, vars, {.name = optimizer, .learning_rate = lr});
    init = &vars.initializer(g);
  }

  FeedMap feed(const ImageDataset& d) const { return {{images, d.images}, {labels, d.labels}}; }
};

}  // namespace dagrad::testing
