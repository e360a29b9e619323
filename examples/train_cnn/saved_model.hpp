// train_cnn's saved models: --export-model DIR writes the inference part of the trained graph
// (images -> logits, and loss and accuracy against labels) with its variables and a signature;
// --load DIR --eval-only evaluates such a directory from its saved graph, building no model in code.
#pragma once

#include <string>
#include <utility>

#include <dagrad/core/dataset.hpp>
#include <dagrad/core/session.hpp>

#include "options.hpp"

namespace train_cnn {

// The outputs of the code-built model that an exported model keeps.
struct InferenceOutputs {
  dagrad::Output images, labels, logits, loss, accuracy;
};

// Signature: inputs "images" and "labels", output "logits"; the nodes "loss" and "accuracy" are
// fetched by name.
void export_model(const std::string& dir, const dagrad::Graph& graph, dagrad::Session& session,
                  const InferenceOutputs& outputs);

// Whether `dir` is a saved model (it holds model.json), not a variables-only checkpoint.
bool is_saved_model(const std::string& dir);

// Mean loss and accuracy over `data` (in batches of 1000, as main.cpp's evaluate) of the model saved
// in `dir`, run on the options' device and threads.
std::pair<double, double> evaluate_saved_model(const std::string& dir, const Options& o,
                                               const dagrad::ImageDataset& data);

}  // namespace train_cnn
