// train_cnn: a LeNet-style CNN trained on Fashion-MNIST with dagrad's graph API.
//   conv 5x5 (32) -> relu -> max-pool -> conv 5x5 (64) -> relu -> max-pool -> dense 128 (relu) -> dense 10
// Prints a progress bar per epoch, then loss and train/test accuracy; writes the curves as SVG.
#include <chrono>
#include <cstdio>
#include <iostream>

#include <CLI/CLI.hpp>

#include <dagrad/autodiff/optimizers.hpp>
#include <dagrad/core/checkpoint.hpp>
#include <dagrad/core/dataset.hpp>
#include <dagrad/dagrad.hpp>
#include <dagrad/ops/layers.hpp>

#include "plot.hpp"
#include "progress.hpp"

using namespace dagrad;

namespace {

struct Options {
  int epochs = 3;
  std::int64_t batch_size = 32;
  int threads = 0;
  double lr = 0.001;
  std::string optimizer = "adam";
  std::uint64_t seed = 1;
  std::string device = "cpu";
  std::string data = kFashionMnistDir;
  std::string save, load, plot = "train_cnn.svg";
  bool eval_only = false;
  std::int64_t limit = 0;  // train on the first N images only (0: all)
};

struct Model {
  Graph g;
  layers::VariableSet vars;
  Output images, labels, logits, loss, accuracy;
  const Node* step = nullptr;
  const Node* init = nullptr;

  explicit Model(const Options& o) : vars(o.seed) {
    images = ops::placeholder(g, DType::Float32, Shape{-1, 28, 28, 1}, "images");
    labels = ops::placeholder(g, DType::Int32, Shape{-1}, "labels");
    layers::Layers nn(g, vars);
    Output x = nn.max_pool(nn.conv2d(images, "conv1", 32, 5));
    x = nn.max_pool(nn.conv2d(x, "conv2", 64, 5));
    x = nn.dense(nn.flatten(x), "dense1", 128, /*relu=*/true);
    logits = nn.dense(x, "dense2", 10);
    const layers::ClassifierMetrics metrics = layers::classifier_metrics(g, logits, labels);
    loss = metrics.loss;
    accuracy = metrics.accuracy;
    step = &minimize(g, loss, vars, {.name = o.optimizer, .learning_rate = o.lr});
    init = &vars.initializer(g);
  }

  FeedMap feed(const ImageDataset& d) const { return {{images, d.images}, {labels, d.labels}}; }
};

// Mean loss and accuracy over a whole split, in fixed batches of 1000.
std::pair<double, double> evaluate(Session& s, const Model& m, const ImageDataset& data) {
  double loss = 0, correct = 0;
  for (std::int64_t begin = 0; begin < data.size(); begin += 1000) {
    const std::int64_t n = std::min<std::int64_t>(1000, data.size() - begin);
    auto out = s.run(m.feed(slice(data, begin, n)), {m.loss, m.accuracy});
    loss += out[0].data<float>()[0] * static_cast<double>(n);
    correct += out[1].data<float>()[0] * static_cast<double>(n);
  }
  return {loss / static_cast<double>(data.size()), correct / static_cast<double>(data.size())};
}

int run(const Options& o) {
  const ImageDataset test = load_idx_dataset(o.data, "t10k");
  ImageDataset train;
  if (!o.eval_only) {
    train = load_idx_dataset(o.data, "train");
    if (o.limit > 0 && o.limit < train.size()) train = slice(train, 0, o.limit);
  }
  Model m(o);
  Session session(m.g, {.device = Device::parse(o.device), .threads = o.threads});
  if (!o.load.empty()) {
    restore_checkpoint(session, m.g, o.load);
    std::cout << "restored variables from " << o.load << "\n";
  } else {
    session.run({}, {}, {m.init});
  }
  if (o.eval_only) {
    const auto [loss, acc] = evaluate(session, m, test);
    std::printf("test loss %.4f  test accuracy %.4f\n", loss, acc);
    return 0;
  }
  std::printf("training on %lld images, testing on %lld; batch %lld, %s lr %g, seed %llu, %d threads, %s\n",
              static_cast<long long>(train.size()), static_cast<long long>(test.size()),
              static_cast<long long>(o.batch_size), o.optimizer.c_str(), o.lr, static_cast<unsigned long long>(o.seed),
              o.threads > 0 ? o.threads : num_threads(), o.device.c_str());
  BatchSampler sampler(train.size(), o.batch_size, o.seed);
  std::vector<double> train_loss, train_acc, test_loss, test_acc;
  using Clock = std::chrono::steady_clock;
  for (int epoch = 0; epoch < o.epochs; ++epoch) {
    sampler.start_epoch(epoch);
    train_cnn::ProgressBar bar(std::cerr, train.size(), train_cnn::str("epoch ", epoch + 1, "/", o.epochs));
    double loss_sum = 0, correct = 0;
    std::int64_t seen = 0;
    const auto start = Clock::now();
    for (std::int64_t b = 0; b < sampler.num_batches(); ++b) {
      const ImageDataset batch = gather(train, sampler.batch(b));
      auto out = session.run(m.feed(batch), {m.loss, m.accuracy}, {m.step});
      const auto n = static_cast<double>(batch.size());
      loss_sum += out[0].data<float>()[0] * n;
      correct += out[1].data<float>()[0] * n;
      seen += batch.size();
      bar.update(seen, loss_sum / static_cast<double>(seen));
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    bar.finish(seen, loss_sum / static_cast<double>(seen));
    train_loss.push_back(loss_sum / static_cast<double>(seen));
    train_acc.push_back(correct / static_cast<double>(seen));
    const auto [tl, ta] = evaluate(session, m, test);
    test_loss.push_back(tl);
    test_acc.push_back(ta);
    std::printf("epoch %d/%d: loss %.4f  train accuracy %.4f  test loss %.4f  test accuracy %.4f  (%.0f images/s, %.1f s)\n",
                epoch + 1, o.epochs, train_loss.back(), train_acc.back(), tl, ta, static_cast<double>(seen) / seconds,
                seconds);
    std::fflush(stdout);
  }
  if (!o.save.empty()) {
    save_checkpoint(session, m.g, o.save);
    std::cout << "saved " << variable_names(m.g).size() << " variables to " << o.save << "\n";
  }
  if (!o.plot.empty() && o.epochs > 0) {
    train_cnn::write_svg_plot(o.plot, {{"train loss", "#1f77b4", train_loss}, {"test loss", "#d62728", test_loss}},
                              {{"train accuracy", "#1f77b4", train_acc}, {"test accuracy", "#d62728", test_acc}});
    std::cout << "wrote the loss and accuracy curves to " << o.plot << "\n";
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"Train a LeNet-style CNN on Fashion-MNIST with dagrad"};
  app.add_option("--epochs", o.epochs, "passes over the training set")->check(CLI::NonNegativeNumber)->capture_default_str();
  app.add_option("--batch-size", o.batch_size, "images per training step")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--threads", o.threads, "CPU threads (0: all cores)")->check(CLI::NonNegativeNumber)->capture_default_str();
  app.add_option("--lr", o.lr, "learning rate")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--optimizer", o.optimizer, "sgd, momentum, nesterov or adam")
      ->check(CLI::IsMember({"sgd", "momentum", "nesterov", "adam"}))
      ->capture_default_str();
  app.add_option("--seed", o.seed, "seed of the initial weights and the batch order")->capture_default_str();
  app.add_option("--device", o.device, "cpu or cuda[:N]")->capture_default_str();
  app.add_option("--data", o.data, "directory of the IDX files ({train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz])")
      ->capture_default_str();
  app.add_option("--save", o.save, "save the variables to this directory (.npy files) after training");
  app.add_option("--load", o.load, "restore the variables from this directory before training or evaluating");
  app.add_flag("--eval-only", o.eval_only, "only evaluate on the test set (with --load)");
  app.add_option("--plot", o.plot, "SVG file for the loss/accuracy curves ('' for none)")->capture_default_str();
  app.add_option("--limit", o.limit, "train on the first N training images only (0: all)")->check(CLI::NonNegativeNumber);
  CLI11_PARSE(app, argc, argv);
  if (o.eval_only && o.load.empty()) {
    std::cerr << "error: --eval-only needs --load DIR\n";
    return 2;
  }
  try {
    return run(o);
  } catch (const Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
