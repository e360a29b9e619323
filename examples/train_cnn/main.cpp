// train_cnn: a LeNet-style CNN trained on Fashion-MNIST with dagrad's graph API.
//   conv 5x5 (32) -> relu -> max-pool -> conv 5x5 (64) -> relu -> max-pool -> dense 128 (relu) -> dense 10
// Shows each epoch's progress (a bar on a terminal, plain lines in a log), then loss and train/test
// accuracy; writes the curves as SVG.
// With --save DIR it checkpoints at the end of every epoch (and every --save-every N steps);
// --resume DIR continues such a run exactly: a run killed and resumed ends with the same weights,
// bit for bit, as one never interrupted. --precision bfloat16 computes the layers in bfloat16 on
// float32 master weights (mixed precision). --profile FILE times each op of the training steps, prints
// the ops that took the time and writes a Chrome trace. --metrics FILE.csv|FILE.json writes each
// epoch's numbers; --quiet prints the result only. Exit status: 0 done, 1 error, 2 usage error.
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <optional>

#include <dagrad/autodiff/optimizers.hpp>
#include <dagrad/core/checkpoint.hpp>
#include <dagrad/dagrad.hpp>
#include <dagrad/ops/layers.hpp>

#include "metrics.hpp"
#include "options.hpp"
#include "plot.hpp"
#include "progress.hpp"
#include "saved_model.hpp"
#include "training_state.hpp"

using namespace dagrad;
using train_cnn::Options;
using train_cnn::Progress;

namespace {

struct Model {
  Graph g;
  layers::VariableSet vars;
  Output images, labels, logits, loss, accuracy;
  const Node* step = nullptr;
  const Node* init = nullptr;

  explicit Model(const Options& o) : vars(o.seed) {
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
    // The optimiser's slots and Adam's beta powers are variables too: checkpoints hold them.
    // Evaluation needs neither them nor the gradients: --eval-only builds the model alone, so it
    // restores the model's variables from a checkpoint of any optimiser.
    if (!o.eval_only) step = &minimize(g, loss, vars, {.name = o.optimizer, .learning_rate = o.lr});
    init = &vars.initializer(g);
  }

  FeedMap feed(const ImageDataset& d) const { return {{images, d.images}, {labels, d.labels}}; }
};

// The device to run on, refused before anything slow (reading the dataset) happens.
Device available_device(const std::string& name) {
  const Device device = Device::parse(name);
  op_registry();           // registers the backends, whose runtimes know the devices
  device_runtime(device);  // throws NotFound: "no CUDA device available (asked for cuda:0)"
  return device;
}

// What this process measured of an epoch (a resumed run's earlier epochs have none).
struct EpochTiming {
  double images_per_second = 0, seconds = 0;
};

// Every finished epoch's metrics: the curves (restored ones included) with this run's timings.
std::vector<train_cnn::EpochMetrics> epoch_metrics(const train_cnn::Progress& p, std::int64_t batches_per_epoch,
                                                   const std::map<std::size_t, EpochTiming>& measured) {
  std::vector<train_cnn::EpochMetrics> rows;
  for (std::size_t e = 0; e < p.train_loss.size(); ++e) {
    train_cnn::EpochMetrics m{.epoch = static_cast<std::int64_t>(e) + 1,
                              .step = (static_cast<std::int64_t>(e) + 1) * batches_per_epoch,
                              .train_loss = p.train_loss[e],
                              .train_accuracy = p.train_accuracy[e],
                              .test_loss = p.test_loss[e],
                              .test_accuracy = p.test_accuracy[e]};
    if (const auto it = measured.find(e); it != measured.end()) {
      m.images_per_second = it->second.images_per_second;
      m.seconds = it->second.seconds;
    }
    rows.push_back(m);
  }
  return rows;
}

// A split of the dataset, refused when it has no images (training or testing on nothing would
// report a loss of NaN as if it were a result) or images of another size than the model's.
ImageDataset load_split(const Options& o, const char* split) {
  ImageDataset data = load_idx_dataset(o.data, split);
  if (data.size() == 0) fail(Code::InvalidArgument, "dataset '", o.data, "': the '", split, "' split has no images");
  const Shape& shape = data.images.shape();
  if (shape[1] != 28 || shape[2] != 28 || shape[3] != 1) {
    fail(Code::InvalidArgument, "dataset '", o.data, "': the '", split, "' images have shape ", shape.to_string(),
         "; this model takes 28x28 images of one channel");
  }
  return data;
}

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

// Trains from `p` to the end of epoch `o.epochs`, checkpointing along the way.
void train_epochs(const Options& o, Session& session, const Model& m, const ImageDataset& train,
                  const ImageDataset& test, const train_cnn::RunSettings& settings, Progress& p, Profiler* profiler) {
  BatchSampler sampler(train.size(), o.batch_size, o.seed);
  const train_cnn::ProgressStyle style = train_cnn::progress_style(o.quiet, stderr);
  std::map<std::size_t, EpochTiming> measured;
  auto write_metrics = [&] {
    if (!o.metrics.empty()) train_cnn::write_metrics(o.metrics, epoch_metrics(p, sampler.num_batches(), measured));
  };
  bool saved = false;
  auto save = [&] {
    if (o.save.empty()) return;
    save_checkpoint(session, m.g, o.save, train_cnn::checkpoint_info(p, settings));
    saved = true;
  };
  using Clock = std::chrono::steady_clock;
  for (; p.epoch < o.epochs; p.start_next_epoch(), save()) {
    sampler.start_epoch(p.epoch);  // the batch order depends on the seed and the epoch only
    train_cnn::ProgressBar bar(std::cerr, train.size(), train_cnn::str("epoch ", p.epoch + 1, "/", o.epochs), style);
    const auto start = Clock::now();
    const std::int64_t seen_before = p.seen;
    while (p.batch < sampler.num_batches()) {
      const ImageDataset batch = gather(train, sampler.batch(p.batch));
      RunStats stats;
      auto out = session.run(m.feed(batch), {m.loss, m.accuracy}, {m.step}, &stats);
      if (profiler != nullptr) profiler->add(stats.profile);
      const auto n = static_cast<double>(batch.size());
      p.loss_sum += out[0].data<float>()[0] * n;
      p.correct += out[1].data<float>()[0] * n;
      p.seen += batch.size();
      ++p.batch;
      ++p.step;
      bar.update(p.seen, p.loss_sum / static_cast<double>(p.seen));
      // The checkpoint at an epoch's end is the one after its evaluation, below.
      if (o.save_every > 0 && p.step % o.save_every == 0 && p.batch < sampler.num_batches()) save();
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    bar.finish(p.seen, p.loss_sum / static_cast<double>(p.seen));
    p.train_loss.push_back(p.loss_sum / static_cast<double>(p.seen));
    p.train_accuracy.push_back(p.correct / static_cast<double>(p.seen));
    const auto [tl, ta] = evaluate(session, m, test);
    p.test_loss.push_back(tl);
    p.test_accuracy.push_back(ta);
    const double images_per_second = static_cast<double>(p.seen - seen_before) / seconds;
    measured[static_cast<std::size_t>(p.epoch)] = {images_per_second, seconds};
    write_metrics();
    if (!o.quiet || p.epoch + 1 == o.epochs) {  // --quiet: the last epoch's line is the result
      std::printf(
          "epoch %lld/%d: loss %.4f  train accuracy %.4f  test loss %.4f  test accuracy %.4f  (%.0f images/s, %.1f "
          "s)\n",
          static_cast<long long>(p.epoch + 1), o.epochs, p.train_loss.back(), p.train_accuracy.back(), tl, ta,
          images_per_second, seconds);
      std::fflush(stdout);
    }
  }
  if (!saved) save();                     // e.g. --epochs 0, or a resumed run that had already finished
  if (measured.empty()) write_metrics();  // no epoch ran: the restored epochs, or none
  if (!o.save.empty() && !o.quiet) {
    std::cout << "saved " << variable_names(m.g).size() << " variables (step " << p.step << ") to " << o.save << "\n";
  }
}

// --export-model: the trained (or loaded) model as a saved model.
void export_model(const Options& o, Session& session, const Model& m) {
  if (o.export_model.empty()) return;
  train_cnn::export_model(o.export_model, m.g, session, {m.images, m.labels, m.logits, m.loss, m.accuracy});
  std::cout << "exported the inference model to " << o.export_model << "\n";
}

// --load MODEL --eval-only where MODEL is a saved model: evaluated from its graph, no Model built.
int run_saved_model(const Options& o, const ImageDataset& test) {
  if (!o.eval_only) {
    fail(Code::InvalidArgument, "'", o.load, "' is a saved model, which --load evaluates (--eval-only); training ",
         "starts from a checkpoint (--save)");
  }
  const auto [loss, acc] = train_cnn::evaluate_saved_model(o.load, o, test);
  if (!o.quiet) std::cout << "evaluated the saved model " << o.load << "\n";
  std::printf("test loss %.4f  test accuracy %.4f\n", loss, acc);
  return 0;
}

int run(const Options& o) {
  const Device device = available_device(o.device);
  const ImageDataset test = load_split(o, "t10k");
  if (!o.load.empty() && train_cnn::is_saved_model(o.load)) return run_saved_model(o, test);
  ImageDataset train;
  if (!o.eval_only) {
    train = load_split(o, "train");
    if (o.limit > 0 && o.limit < train.size()) train = slice(train, 0, o.limit);
  }
  Model m(o);
  Session session(m.g, {.device = device, .threads = o.threads, .profile = !o.profile.empty()});
  const train_cnn::RunSettings settings{.optimizer = o.optimizer,
                                        .learning_rate = o.lr,
                                        .batch_size = o.batch_size,
                                        .seed = o.seed,
                                        .train_images = train.size(),
                                        .precision = o.precision};
  Progress progress;
  if (!o.resume.empty()) {
    const CheckpointInfo info = restore_checkpoint(session, m.g, o.resume);
    if (!o.eval_only) {
      const std::int64_t batches = BatchSampler(train.size(), o.batch_size, o.seed).num_batches();
      progress = train_cnn::progress_from_checkpoint(info, settings, batches, o.resume);
    }
    if (!o.quiet) std::cout << "resumed from " << o.resume << " at step " << info.step << "\n";
  } else if (!o.load.empty()) {
    restore_checkpoint(session, m.g, o.load);
    if (!o.quiet) std::cout << "restored variables from " << o.load << "\n";
  } else {
    session.run({}, {}, {m.init});
  }
  if (o.eval_only) {
    const auto [loss, acc] = evaluate(session, m, test);
    std::printf("test loss %.4f  test accuracy %.4f\n", loss, acc);
    export_model(o, session, m);
    return 0;
  }
  if (!o.quiet) {
    std::printf("training on %lld images, testing on %lld; batch %lld, %s lr %g, seed %llu, %d threads, %s, %s\n",
                static_cast<long long>(train.size()), static_cast<long long>(test.size()),
                static_cast<long long>(o.batch_size), o.optimizer.c_str(), o.lr,
                static_cast<unsigned long long>(o.seed), o.threads > 0 ? o.threads : num_threads(), o.device.c_str(),
                o.precision.c_str());
  }
  std::optional<Profiler> profiler;
  if (!o.profile.empty()) profiler.emplace();
  train_epochs(o, session, m, train, test, settings, progress, profiler ? &*profiler : nullptr);
  export_model(o, session, m);
  if (profiler) {
    std::cout << "training steps, op by op:\n" << profiler->report();
    profiler->write_chrome_trace(o.profile);
    std::cout << "wrote the first " << profiler->traced_runs() << " steps as a Chrome trace to " << o.profile << "\n";
  }
  if (!o.plot.empty() && !progress.train_loss.empty()) {
    train_cnn::write_svg_plot(
        o.plot, {{"train loss", "#1f77b4", progress.train_loss}, {"test loss", "#d62728", progress.test_loss}},
        {{"train accuracy", "#1f77b4", progress.train_accuracy}, {"test accuracy", "#d62728", progress.test_accuracy}});
    if (!o.quiet) std::cout << "wrote the loss and accuracy curves to " << o.plot << "\n";
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return dagrad::run_main([&] {
    Options o;
    if (const auto status = train_cnn::parse_options(argc, argv, o)) return *status;
    return run(o);
  });
}
