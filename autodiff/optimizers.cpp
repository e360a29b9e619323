// minimize(): gradients, slot variables and Apply* updates for SGD, momentum, Nesterov and Adam.
#include "dagrad/autodiff/optimizers.hpp"

#include "dagrad/autodiff/gradients.hpp"
#include "dagrad/core/checked.hpp"
#include "dagrad/ops/array_ops.hpp"
#include "dagrad/ops/collective_ops.hpp"
#include "dagrad/ops/math_ops.hpp"
#include "dagrad/ops/state_ops.hpp"
#include "dagrad/ops/training_ops.hpp"

namespace dagrad {
namespace {

// Adds a node like ops::* would, but with control inputs.
const Node& with_deps(Graph& g, std::string_view op, std::vector<Output> inputs, AttrMap attrs, std::string_view name,
                      const std::vector<int>& deps) {
  return g.add_node(op, std::move(inputs), std::move(attrs), name, deps);
}

// The gradients of every shard loss, merged across the group: per pack of variables (see
// DataParallel::bytes_per_pack), one CollectiveReduceShards of the local shards' gradients (shard
// order), each waiting for the one before, so every process issues the collectives in the same
// order whatever its schedule.
std::vector<Output> data_parallel_gradients(Graph& g, const DataParallel& dp, const std::vector<Output>& params,
                                            DType dtype) {
  if (dp.shard_losses.empty()) invalid_argument("minimize: data_parallel needs at least one shard loss");
  if (dp.group_size < 1) invalid_argument("minimize: data_parallel group_size must be positive, got ", dp.group_size);
  std::vector<std::vector<Output>> shard_grads;
  for (std::size_t k = 0; k < dp.shard_losses.size(); ++k) {
    const Output& loss = dp.shard_losses[k];
    if (loss.shape().rank() != 0 || loss.dtype() != dtype) {
      invalid_argument("minimize: shard loss ", k, " must be a ", dtype_name(dtype), " scalar like the loss, got ",
                       dtype_name(loss.dtype()), " ", loss.shape().to_string());
    }
    shard_grads.push_back(gradients(g, {loss}, params));
  }
  if (dp.bytes_per_pack < 0)
    invalid_argument("minimize: data_parallel bytes_per_pack must be >= 0, got ", dp.bytes_per_pack);
  const auto bytes_of = [&](std::size_t i) {
    return static_cast<std::int64_t>(checked_bytes(params[i].shape().num_elements(), dtype_size(dtype), "gradient"));
  };
  // Packs from the last variable back: backpropagation forms the last layers' gradients first, so
  // each pack's exchange starts (CollectiveReduceShards starts early) while the gradients of the
  // layers before it are still being formed.
  std::vector<Output> merged(params.size());
  std::vector<int> previous;
  for (std::size_t end = params.size(), pack = 0; end > 0; ++pack) {
    std::size_t first = end - 1;
    for (std::int64_t bytes = bytes_of(first); first > 0; --first) {
      bytes = checked_add(bytes, bytes_of(first - 1), "gradient pack bytes");
      if (dp.bytes_per_pack > 0 && bytes > dp.bytes_per_pack) break;
    }
    // Input k * tensors + t: shard k's gradient of variable first + t.
    std::vector<Output> inputs;
    for (const auto& grads : shard_grads) inputs.insert(inputs.end(), grads.begin() + first, grads.begin() + end);
    const Node& reduce = with_deps(g, "CollectiveReduceShards", std::move(inputs),
                                   {{"num_tensors", static_cast<std::int64_t>(end - first)},
                                    {"group_size", dp.group_size},
                                    {"merge_op", std::string("Add")},
                                    {"final_op", std::string("Div")}},
                                   str_cat("data_parallel/pack_", pack), previous);
    previous = {reduce.id};
    for (int t = 0; t < reduce.num_outputs(); ++t) merged[first + static_cast<std::size_t>(t)] = g.output(reduce.id, t);
    end = first;
  }
  return merged;
}

}  // namespace

const Node& minimize(Graph& g, Output loss, layers::VariableSet& vars, const OptimizerOptions& o) {
  const std::string& kind = o.name;
  if (kind != "sgd" && kind != "momentum" && kind != "nesterov" && kind != "adam") {
    invalid_argument("minimize: unknown optimizer '", kind, "'; expected sgd, momentum, nesterov or adam");
  }
  if (!(o.learning_rate > 0)) invalid_argument("minimize: learning_rate must be positive, got ", o.learning_rate);
  if (loss.shape().rank() != 0)
    invalid_argument("minimize: the loss must be a scalar, got shape ", loss.shape().to_string());
  const std::vector<Output> params = vars.trainable();
  if (params.empty()) invalid_argument("minimize: there are no trainable variables");
  const std::vector<Output> grads = o.data_parallel ? data_parallel_gradients(g, *o.data_parallel, params, loss.dtype())
                                                    : gradients(g, {loss}, params);
  std::vector<int> grad_nodes;
  for (const Output& gr : grads) grad_nodes.push_back(gr.node);

  const DType dtype = loss.dtype();
  // Slots and updates are named after their variable's full name ("conv1/kernel/Adam"), under no
  // scope: a checkpoint finds them by those names whatever scope minimize was called in.
  auto per_variable = [&g] { return g.root_name_scope(); };
  Output lr = ops::scalar(g, o.learning_rate, dtype, "learning_rate");
  std::vector<const Node*> updates;
  if (kind == "sgd") {
    for (std::size_t i = 0; i < params.size(); ++i) {
      auto root = per_variable();
      updates.push_back(&with_deps(g, "ApplyGradientDescent", {params[i], lr, grads[i]}, {},
                                   str_cat(params[i].op().name, "/ApplyGradientDescent"), grad_nodes));
    }
  } else if (kind == "momentum" || kind == "nesterov") {
    Output momentum = ops::scalar(g, o.momentum, dtype, "momentum");
    for (std::size_t i = 0; i < params.size(); ++i) {
      const std::string& name = params[i].op().name;
      auto root = per_variable();
      Output accum = vars.create_zeros(g, str_cat(name, "/Momentum"), params[i].shape(), dtype, false);
      updates.push_back(&with_deps(g, "ApplyMomentum", {params[i], accum, lr, grads[i], momentum},
                                   {{"use_nesterov", kind == "nesterov"}}, str_cat(name, "/ApplyMomentum"),
                                   grad_nodes));
    }
  } else {
    Output beta1 = ops::scalar(g, o.beta1, dtype, "beta1");
    Output beta2 = ops::scalar(g, o.beta2, dtype, "beta2");
    Output epsilon = ops::scalar(g, o.epsilon, dtype, "epsilon");
    // beta^t for the bias correction, starting at beta^1 for the first step (as TF's Adam).
    Output beta1_power = vars.create(g, "beta1_power", Tensor::full(dtype, Shape{}, o.beta1), false);
    Output beta2_power = vars.create(g, "beta2_power", Tensor::full(dtype, Shape{}, o.beta2), false);
    // The slots first, then the updates one after another: sessions run such a run of ApplyAdam
    // nodes as one pass (ops/fusions.cpp).
    std::vector<std::pair<Output, Output>> slots;
    for (std::size_t i = 0; i < params.size(); ++i) {
      const std::string& name = params[i].op().name;
      auto root = per_variable();
      slots.emplace_back(vars.create_zeros(g, str_cat(name, "/Adam"), params[i].shape(), dtype, false),
                         vars.create_zeros(g, str_cat(name, "/Adam_1"), params[i].shape(), dtype, false));
    }
    for (std::size_t i = 0; i < params.size(); ++i) {
      const std::string& name = params[i].op().name;
      auto root = per_variable();
      const auto& [m, v] = slots[i];
      updates.push_back(&with_deps(g, "ApplyAdam",
                                   {params[i], m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grads[i]}, {},
                                   str_cat(name, "/ApplyAdam"), grad_nodes));
    }
    // The powers advance only after every update has read them.
    std::vector<int> update_ids;
    for (const Node* u : updates) update_ids.push_back(u->id);
    const Node& next1 =
        with_deps(g, "Assign", {beta1_power, ops::mul(g, beta1_power, beta1)}, {}, "update_beta1_power", update_ids);
    const Node& next2 =
        with_deps(g, "Assign", {beta2_power, ops::mul(g, beta2_power, beta2)}, {}, "update_beta2_power", update_ids);
    updates.push_back(&next1);
    updates.push_back(&next2);
  }
  return ops::group(g, updates, "train_step");
}

}  // namespace dagrad
