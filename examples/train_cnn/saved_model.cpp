// Exporting train_cnn's inference graph as a saved model, and evaluating one from its directory.
#include "saved_model.hpp"

#include <algorithm>
#include <filesystem>

#include <dagrad/core/saved_model.hpp>
#include <dagrad/core/subgraph.hpp>

namespace train_cnn {

using namespace dagrad;

void export_model(const std::string& dir, const Graph& graph, Session& session, const InferenceOutputs& o) {
  // Only what logits, loss and accuracy need: no gradients, optimiser slots or initialisers.
  const std::unique_ptr<Graph> inference = extract_subgraph(graph, {o.logits, o.loss, o.accuracy});
  const Signature signature{.inputs = {{"images", o.images.name()}, {"labels", o.labels.name()}},
                            .outputs = {{"logits", o.logits.name()}}};
  save_model(dir, *inference, session, signature);  // the session holds every variable by name
}

bool is_saved_model(const std::string& dir) {
  std::error_code ec;
  return std::filesystem::is_regular_file(std::filesystem::path(dir) / kModelManifestFile, ec);
}

std::pair<double, double> evaluate_saved_model(const std::string& dir, const Options& o, const ImageDataset& data) {
  const Model model = load_model(dir, {.device = Device::parse(o.device), .threads = o.threads});
  const Output images = model.input("images"), labels = model.input("labels");
  const std::vector<Output> fetches = {model.output("loss"), model.output("accuracy")};
  double loss = 0, correct = 0;
  for (std::int64_t begin = 0; begin < data.size(); begin += 1000) {
    const std::int64_t n = std::min<std::int64_t>(1000, data.size() - begin);
    const ImageDataset batch = slice(data, begin, n);
    const auto out = model.session->run({{images, batch.images}, {labels, batch.labels}}, fetches);
    loss += out[0].data<float>()[0] * static_cast<double>(n);
    correct += out[1].data<float>()[0] * static_cast<double>(n);
  }
  return {loss / static_cast<double>(data.size()), correct / static_cast<double>(data.size())};
}

}  // namespace train_cnn
