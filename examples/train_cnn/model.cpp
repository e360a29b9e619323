// The towers of train_cnn's model and the optimiser over them.
#include "model.hpp"

#include <dagrad/autodiff/optimizers.hpp>
#include <dagrad/dagrad.hpp>

namespace train_cnn {

using namespace dagrad;

Tower::Tower(Graph& g, layers::VariableSet& vars, const Options& o) {
  images = ops::placeholder(g, DType::Float32, Shape{-1, 28, 28, 1}, "images");
  labels = ops::placeholder(g, DType::Int32, Shape{-1}, "labels");
  // bfloat16: the layers compute in it on float32 master weights (classifier_metrics' loss is float32).
  const DType compute = o.precision == "bfloat16" ? DType::BFloat16 : DType::Float32;
  layers::Layers nn(g, vars, DType::Float32);
  Output x = compute == DType::Float32 ? images : ops::cast(g, images, compute, false, "images/Cast");
  x = nn.max_pool(nn.conv2d(x, "conv1", 32, 5));
  x = nn.max_pool(nn.conv2d(x, "conv2", 64, 5));
  x = nn.dense(nn.flatten(x), "dense1", 128, /*relu=*/true);
  logits = nn.dense(x, "dense2", 10);
  const layers::ClassifierMetrics metrics = layers::classifier_metrics(g, logits, labels);
  loss = metrics.loss;
  accuracy = metrics.accuracy;
}

Model::Model(const Options& o, const Job& job, std::int64_t local_shards) : vars(o.seed) {
  vars.reuse_variables(job.data_parallel());
  for (std::int64_t k = 0; k < local_shards; ++k) towers.emplace_back(g, vars, o);
  // The optimiser's slots and Adam's beta powers are variables too: checkpoints hold them.
  // Evaluation needs neither them nor the gradients: --eval-only builds the model alone, so it
  // restores the model's variables from a checkpoint of any optimiser.
  if (!o.eval_only) {
    OptimizerOptions options{.name = o.optimizer, .learning_rate = o.lr};
    if (job.data_parallel()) {
      std::vector<Output> losses;
      for (const Tower& t : towers) losses.push_back(t.loss);
      options.data_parallel =
          DataParallel{.group_size = job.size(), .shard_losses = std::move(losses), .bytes_per_pack = o.bytes_per_pack};
    }
    step = &minimize(g, towers[0].loss, vars, options);
  }
  init = &vars.initializer(g);
}

}  // namespace train_cnn
