// train_cnn: a LeNet-style CNN (model.hpp) trained on Fashion-MNIST with dagrad's graph API.
// Shows each epoch's progress (a bar on a terminal, plain lines in a log), then loss and train/test
// accuracy; writes the curves as SVG.
// With --save DIR it checkpoints at the end of every epoch (and every --save-every N steps);
// --resume DIR continues such a run exactly: a run killed and resumed ends with the same weights,
// bit for bit, as one never interrupted. --precision bfloat16 computes the layers in bfloat16 on
// float32 master weights (mixed precision). --profile FILE times each op of the training steps, prints
// the ops that took the time and writes a Chrome trace. --metrics FILE.csv|FILE.json writes each
// epoch's numbers; --quiet prints the result only. --data-parallel trains as a process of an MPI
// job (mpirun -np N train_cnn --data-parallel): the same bits at any N dividing --shards, process 0
// alone reporting. Exit status: 0 done, 1 error, 2 usage error.
#include <chrono>
#include <cstdio>
#include <iostream>
#include <limits>
#include <map>
#include <optional>

#include <dagrad/core/checkpoint.hpp>
#include <dagrad/dagrad.hpp>

#include "job.hpp"
#include "metrics.hpp"
#include "model.hpp"
#include "options.hpp"
#include "plot.hpp"
#include "progress.hpp"
#include "saved_model.hpp"
#include "steps.hpp"
#include "training_state.hpp"

using namespace dagrad;
using train_cnn::Options;
using train_cnn::Progress;

namespace {

using train_cnn::Model;  // not dagrad::Model, a loaded saved model
using train_cnn::Steps;
using train_cnn::Tower;

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
    auto out = s.run(m.feed(slice(data, begin, n)), {m.main().loss, m.main().accuracy});
    loss += out[0].data<float>()[0] * static_cast<double>(n);
    correct += out[1].data<float>()[0] * static_cast<double>(n);
  }
  return {loss / static_cast<double>(data.size()), correct / static_cast<double>(data.size())};
}

// Trains from `p` to the end of epoch `o.epochs`, checkpointing along the way. Data-parallel,
// every process trains; only the reporting one evaluates, prints and writes files.
void train_epochs(const Options& o, const train_cnn::Job& job, Session& session, const Model& m, Steps& steps,
                  const ImageDataset& train, const ImageDataset& test, const train_cnn::RunSettings& settings,
                  Progress& p, Profiler* profiler) {
  BatchSampler sampler(train.size(), o.batch_size, o.seed);
  const train_cnn::ProgressStyle style =
      job.reports() ? train_cnn::progress_style(o.quiet, stderr) : train_cnn::ProgressStyle::Quiet;
  std::map<std::size_t, EpochTiming> measured;
  auto write_metrics = [&] {
    if (!o.metrics.empty() && job.reports()) {
      train_cnn::write_metrics(o.metrics, epoch_metrics(p, steps.batches_per_epoch(), measured));
    }
  };
  bool saved = false;
  auto save = [&] {
    if (o.save.empty()) return;
    steps.fold(p);
    if (job.reports()) save_checkpoint(session, m.g, o.save, train_cnn::checkpoint_info(p, settings));
    saved = true;
  };
  using Clock = std::chrono::steady_clock;
  for (; p.epoch < o.epochs; p.start_next_epoch(), save()) {
    sampler.start_epoch(p.epoch);  // the batch order depends on the seed and the epoch only
    steps.start_epoch();
    const std::int64_t images = steps.batches_per_epoch() * o.batch_size;
    train_cnn::ProgressBar bar(std::cerr, std::min(images, train.size()),
                               train_cnn::str("epoch ", p.epoch + 1, "/", o.epochs), style);
    const auto start = Clock::now();
    const std::int64_t seen_before = p.seen;
    while (p.batch < steps.batches_per_epoch()) {
      steps.run(session, m, train, sampler.batch(p.batch), p, profiler);
      ++p.batch;
      ++p.step;
      bar.update(p.seen, steps.running_loss(p));
      // The checkpoint at an epoch's end is the one after its evaluation, below.
      if (o.save_every > 0 && p.step % o.save_every == 0 && p.batch < steps.batches_per_epoch()) save();
    }
    steps.fold(p);
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    bar.finish(p.seen, steps.running_loss(p));
    p.train_loss.push_back(p.loss_sum / static_cast<double>(p.seen));
    p.train_accuracy.push_back(p.correct / static_cast<double>(p.seen));
    constexpr double kNotEvaluated = std::numeric_limits<double>::quiet_NaN();
    const auto [tl, ta] = job.reports() ? evaluate(session, m, test) : std::pair{kNotEvaluated, kNotEvaluated};
    p.test_loss.push_back(tl);
    p.test_accuracy.push_back(ta);
    const double images_per_second = static_cast<double>(p.seen - seen_before) / seconds;
    measured[static_cast<std::size_t>(p.epoch)] = {images_per_second, seconds};
    write_metrics();
    if (job.reports() && (!o.quiet || p.epoch + 1 == o.epochs)) {  // --quiet: the last epoch's line is the result
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
  if (!o.save.empty() && !o.quiet && job.reports()) {
    std::cout << "saved " << variable_names(m.g).size() << " variables (step " << p.step << ") to " << o.save << "\n";
  }
}

// --export-model: the trained (or loaded) model as a saved model.
void export_model(const Options& o, Session& session, const Model& m) {
  if (o.export_model.empty()) return;
  const Tower& t = m.main();
  train_cnn::export_model(o.export_model, m.g, session, {t.images, t.labels, t.logits, t.loss, t.accuracy});
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

// --resume / --load: the reporting process reads the checkpoint (the others need not see its
// directory), and every process gets its variables and, for --resume, its training state.
// Alone, nothing is sent; otherwise every process first runs the initialisers so that it holds
// every variable the broadcast overwrites. Without either option the initialisers alone.
Progress restore(const Options& o, const train_cnn::Job& job, Session& session, const Model& m,
                 const train_cnn::RunSettings& settings, std::int64_t batches_per_epoch) {
  if (job.data_parallel() || (o.resume.empty() && o.load.empty())) session.run({}, {}, {m.init});
  Progress progress;
  if (!o.resume.empty()) {
    CheckpointInfo info;
    if (job.reports()) {
      info = restore_checkpoint(session, m.g, o.resume);
      // Refused here first, by the reporting process alone: the others end with the job.
      if (!o.eval_only) progress = train_cnn::progress_from_checkpoint(info, settings, batches_per_epoch, o.resume);
    }
    if (job.data_parallel()) {
      info = train_cnn::decode_checkpoint_info(job.broadcast(train_cnn::encode_checkpoint_info(info)));
      if (!o.eval_only) progress = train_cnn::progress_from_checkpoint(info, settings, batches_per_epoch, o.resume);
    }
    if (!o.quiet && job.reports()) std::cout << "resumed from " << o.resume << " at step " << info.step << "\n";
  } else if (!o.load.empty()) {
    if (job.reports()) restore_checkpoint(session, m.g, o.load);
    if (!o.quiet && job.reports()) std::cout << "restored variables from " << o.load << "\n";
  }
  if (job.data_parallel()) {
    // The optimiser's slots are in the set (minimize adds them): every variable of the graph.
    if (variable_names(m.g).size() != m.vars.all().size()) {
      fail(Code::Internal, "train_cnn: the graph has ", variable_names(m.g).size(), " variables but the set ",
           m.vars.all().size(), "; the broadcast would miss some");
    }
    job.broadcast_variables(session, m.vars);  // process 0's initial, restored or resumed values
  }
  return progress;
}

// Data-parallel: this process's part of each batch; a process count that does not divide
// --shards is a usage error (reported once, by the reporting process).
std::optional<ShardPlan> shard_plan(const Options& o, const train_cnn::Job& job) {
  if (!job.data_parallel()) return std::nullopt;
  return plan_shards(o.batch_size, o.shards, job.size(), job.rank());
}

int run(const Options& o, const train_cnn::Job& job) {
  std::optional<ShardPlan> plan;
  try {
    plan = shard_plan(o, job);
  } catch (const Error& e) {
    if (job.reports()) {
      std::cerr << "error: " << e.what() << " (mpirun -np)\nusage: train_cnn [OPTIONS] (train_cnn --help lists them)\n";
    }
    return kExitUsage;
  }
  const Device device = available_device(o.device);
  const ImageDataset test = load_split(o, "t10k");
  if (!o.load.empty() && train_cnn::is_saved_model(o.load)) return run_saved_model(o, test);
  ImageDataset train;
  if (!o.eval_only) {
    train = load_split(o, "train");
    if (o.limit > 0 && o.limit < train.size()) train = slice(train, 0, o.limit);
  }
  Model m(o, job, plan ? plan->local_shards() : 1);
  Session session(m.g, {.device = device, .threads = o.threads, .profile = !o.profile.empty() && job.reports()});
  const train_cnn::RunSettings settings{.optimizer = o.optimizer,
                                        .learning_rate = o.lr,
                                        .batch_size = o.batch_size,
                                        .seed = o.seed,
                                        .train_images = train.size(),
                                        .precision = o.precision,
                                        .shards = plan ? plan->shards : 0};
  std::optional<Steps> steps;
  if (!o.eval_only) steps.emplace(o, job, plan, train.size());
  Progress progress = restore(o, job, session, m, settings, steps ? steps->batches_per_epoch() : 1);
  if (o.eval_only) {
    const auto [loss, acc] = evaluate(session, m, test);
    std::printf("test loss %.4f  test accuracy %.4f\n", loss, acc);
    export_model(o, session, m);
    return 0;
  }
  if (!o.quiet && job.reports()) {
    std::printf("training on %lld images, testing on %lld; batch %lld, %s lr %g, seed %llu, %d threads, %s, %s",
                static_cast<long long>(train.size()), static_cast<long long>(test.size()),
                static_cast<long long>(o.batch_size), o.optimizer.c_str(), o.lr,
                static_cast<unsigned long long>(o.seed), o.threads > 0 ? o.threads : num_threads(), o.device.c_str(),
                o.precision.c_str());
    if (plan) {
      const std::int64_t dropped = train.size() - steps->batches_per_epoch() * o.batch_size;
      std::printf("; data-parallel: %d process%s x %lld of %lld micro-shards of %lld images", job.size(),
                  job.size() == 1 ? "" : "es", static_cast<long long>(plan->local_shards()),
                  static_cast<long long>(plan->shards), static_cast<long long>(plan->shard_rows));
      if (dropped > 0)
        std::printf(", the last %lld images of each epoch dropped (a partial batch)", static_cast<long long>(dropped));
    }
    std::printf("\n");
  }
  std::optional<Profiler> profiler;
  if (!o.profile.empty() && job.reports()) profiler.emplace();
  train_epochs(o, job, session, m, *steps, train, test, settings, progress, profiler ? &*profiler : nullptr);
  if (!job.reports()) return 0;
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

// Data-parallel: the run as a process of an MPI job, whose errors name the process. Leaving with
// an exception, the Job leaves MPI unfinalised and mpirun ends the other processes.
int run_data_parallel(int* argc, char*** argv, const Options& o) {
  const train_cnn::Job job(argc, argv);
  try {
    return run(o, job);
  } catch (const Error& e) {
    fail(e.code(), "rank ", job.rank(), " of ", job.size(), ": ", e.what());
  } catch (const std::bad_alloc&) {
    fail(Code::ResourceExhausted, "rank ", job.rank(), " of ", job.size(), ": out of memory");
  } catch (const std::exception& e) {
    fail(Code::Internal, "rank ", job.rank(), " of ", job.size(), ": internal error: ", e.what());
  }
}

}  // namespace

int main(int argc, char** argv) {
  return dagrad::run_main([&] {
    Options o;
    if (const auto status = train_cnn::parse_options(argc, argv, o)) return *status;
    return o.data_parallel ? run_data_parallel(&argc, &argv, o) : run(o, train_cnn::Job());
  });
}
