// The MPI test program, run by tests/mpi/run_tests.sh under `mpirun -np 1/2/4`:
//   train --shards S --steps K [--pack BYTES] --out FILE   trains a small CNN data-parallel on
//       seeded data (gradients in packs of BYTES: DataParallel::bytes_per_pack) and writes the
//       trained weights' bytes (process 0), after checking every process holds the same
//   op                                      CollectiveReduceShards across the job against the fold
//       of every process's shards done here (each process makes them all from their seeds)
//   fail --rank R                           process R throws in its second step: the job must end
//   stall --rank R                          process R sleeps 60 s before its second step: the others'
//                                           collective times out (DAGRAD_MPI_TIMEOUT) and ends the job
//   staged                                  the same on a (fake) CUDA device: the shards staged through
//                                           host memory give the CPU kernel's bits, back on the device
//   mismatch                                process 0's shard differs in size: MPI's error, as an Error
//   group                                   group_size unlike the job's size is an error naming both;
//                                           so is a second mpi::World
//   speed --batch B --shards S --steps K --threads T [--plain 1] [--pack BYTES]   images/s of
//       train_cnn's model (28x28 synthetic images, Adam) data-parallel, its gradients in packs of
//       BYTES (DataParallel::bytes_per_pack; 0: all in one), with the collectives' share of a
//       step; or with --plain 1 trained the ordinary way (one process, whole batches): the
//       measurement of README's "Data-parallel training"
// Exit status: 0 passed, 1 error (an "error: ..." line), 2 usage.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include <dagrad/backends/mpi/world.hpp>
#include <dagrad/core/file_io.hpp>
#include <dagrad/core/random.hpp>
#include <dagrad/dagrad.hpp>
#include <dagrad/ops/collective_ops.hpp>

#include "support/fake_device.hpp"

using namespace dagrad;

namespace {

constexpr std::int64_t kImage = 8, kClasses = 4, kGlobalBatch = 16;

struct Args {
  std::string mode, out;
  std::int64_t shards = 4, steps = 3, fail_rank = -1;
  std::int64_t batch = 32, threads = 0, plain = 0, pack = 0;  // speed
};

Args parse(int argc, char** argv) {
  Args a;
  if (argc < 2) throw std::invalid_argument("usage: dagrad_mpi_test train|op|fail|group [options]");
  a.mode = argv[1];
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string key = argv[i], value = argv[i + 1];
    if (key == "--shards")
      a.shards = std::stoll(value);
    else if (key == "--steps")
      a.steps = std::stoll(value);
    else if (key == "--out")
      a.out = value;
    else if (key == "--rank")
      a.fail_rank = std::stoll(value);
    else if (key == "--batch")
      a.batch = std::stoll(value);
    else if (key == "--threads")
      a.threads = std::stoll(value);
    else if (key == "--plain")
      a.plain = std::stoll(value);
    else if (key == "--pack")
      a.pack = std::stoll(value);
    else
      throw std::invalid_argument("unknown option " + key);
  }
  return a;
}

// Uniform values in [-1, 1) from `seed`: the same tensor on every process.
Tensor seeded(const Shape& shape, std::uint64_t seed) {
  Tensor t = Tensor::zeros(DType::Float32, shape);
  SplitMix64 rng(seed);
  for (std::int64_t i = 0; i < t.num_elements(); ++i) t.data<float>()[i] = static_cast<float>(2 * rng.uniform() - 1);
  return t;
}

// Rows [first, first + count) of a [rows, ...] tensor.
Tensor rows(const Tensor& t, std::int64_t first, std::int64_t count) {
  std::vector<std::int64_t> dims = t.shape().dims();
  const std::int64_t row = t.num_elements() / dims[0];
  dims[0] = count;
  Tensor out = Tensor::zeros(t.dtype(), Shape(dims));
  const std::size_t row_bytes = static_cast<std::size_t>(row) * dtype_size(t.dtype());
  std::memcpy(out.raw_data(), static_cast<const char*>(t.raw_data()) + first * row_bytes, count * row_bytes);
  return out;
}

std::uint64_t fnv1a(const void* data, std::size_t bytes, std::uint64_t h = 1469598103934665603ull) {
  for (std::size_t i = 0; i < bytes; ++i) h = (h ^ static_cast<const unsigned char*>(data)[i]) * 1099511628211ull;
  return h;
}

int train(const mpi::World& world, const Args& a) {
  const ShardPlan plan = plan_shards(kGlobalBatch, a.shards, world.size(), world.rank());
  Graph g;
  // Each process seeds its weights differently: only the broadcast from process 0 makes them agree.
  layers::VariableSet vars(7 + static_cast<std::uint64_t>(world.rank()));
  vars.reuse_variables(true);  // one model per local micro-shard, over the same weights
  std::vector<Output> images, labels, losses;
  for (std::int64_t k = 0; k < plan.local_shards(); ++k) {
    images.push_back(ops::placeholder(g, DType::Float32, Shape{plan.shard_rows, kImage, kImage, 1}, "images"));
    labels.push_back(ops::placeholder(g, DType::Int32, Shape{plan.shard_rows}, "labels"));
    layers::Layers nn(g, vars, DType::Float32);
    Output x = nn.max_pool(nn.conv2d(images.back(), "conv", 4, 3));
    losses.push_back(layers::classifier_metrics(g, nn.dense(nn.flatten(x), "dense", kClasses), labels.back()).loss);
  }
  const Node& step = minimize(
      g, ops::add_n(g, losses), vars,
      {.name = "adam",
       .learning_rate = 0.01,
       .data_parallel = DataParallel{.group_size = world.size(), .shard_losses = losses, .bytes_per_pack = a.pack}});
  const Node& init = vars.initializer(g);
  Session session(g);
  session.run({}, {}, {&init});
  world.broadcast_variables(session, vars);
  const auto weights_hash = [&] {
    std::uint64_t h = fnv1a(nullptr, 0);
    for (const Output& v : vars.trainable()) {
      const Tensor& t = session.variables().get(v.op().name);
      h = fnv1a(t.raw_data(), t.nbytes(), h);
    }
    return h;
  };
  const std::uint64_t initial = weights_hash();
  for (std::int64_t s = 0; s < a.steps; ++s) {
    // Every process makes the same global batch, then feeds its own micro-shards' rows.
    const Tensor batch_images = seeded(Shape{kGlobalBatch, kImage, kImage, 1}, 1000 + s);
    Tensor batch_labels = Tensor::zeros(DType::Int32, Shape{kGlobalBatch});
    SplitMix64 rng(2000 + s);
    for (std::int64_t i = 0; i < kGlobalBatch; ++i) batch_labels.data<std::int32_t>()[i] = rng.below(kClasses);
    FeedMap feeds;
    for (std::int64_t k = 0; k < plan.local_shards(); ++k) {
      const std::int64_t first = plan.first_row() + k * plan.shard_rows;
      feeds[images[k]] = rows(batch_images, first, plan.shard_rows);
      feeds[labels[k]] = rows(batch_labels, first, plan.shard_rows);
    }
    if (s == 1 && world.rank() == a.fail_rank) {
      if (a.mode == "stall") std::this_thread::sleep_for(std::chrono::seconds(60));
      throw std::runtime_error("planted failure on this rank");
    }
    session.run(feeds, {}, {&step});
  }
  const std::uint64_t trained = weights_hash();
  if (trained == initial) throw std::runtime_error("training left the weights unchanged");
  for (std::uint64_t h : world.all_gather(trained)) {
    if (h != trained) throw std::runtime_error("the processes' weights differ after training");
  }
  if (world.rank() == 0 && !a.out.empty()) {
    std::string bytes;
    for (const Output& v : vars.trainable()) {
      const Tensor& t = session.variables().get(v.op().name);
      bytes.append(static_cast<const char*>(t.raw_data()), t.nbytes());
    }
    write_file(a.out, [&](OutputFile& f) { f.write(bytes); });
  }
  if (world.rank() == 0) std::cout << "trained on " << world.size() << " processes: " << std::hex << trained << "\n";
  return kExitSuccess;
}

// Each process gives 2 shards of [3, 5]; every process folds all of them here (the reference)
// and compares with the collective's result, bit for bit, for every merge and final op.
void check_fused(const mpi::World& world);

int check_op(const mpi::World& world) {
  constexpr int kLocal = 2;
  for (const char* merge : {"Add", "Mul", "Min", "Max"}) {
    for (const char* final_op : {"Id", "Div"}) {
      Graph g;
      std::vector<Output> shards;
      for (int k = 0; k < kLocal; ++k) {
        shards.push_back(ops::constant(g, seeded(Shape{3, 5}, 10 * world.rank() + k)));
      }
      Output reduced = ops::collective_reduce_shards(
          g, shards, {.group_size = world.size(), .merge_op = merge, .final_op = final_op});
      Session session(g);
      const Tensor got = session.run({}, reduced);
      std::vector<Tensor> all;
      for (int r = 0; r < world.size(); ++r) {
        for (int k = 0; k < kLocal; ++k) all.push_back(seeded(Shape{3, 5}, 10 * r + k));
      }
      const Tensor want =
          run_op(
              "CollectiveReduceShards", all,
              {{"group_size", std::int64_t{1}}, {"merge_op", std::string(merge)}, {"final_op", std::string(final_op)}},
              {.backend = "reference"})
              .front();
      if (std::memcmp(got.raw_data(), want.raw_data(), want.nbytes()) != 0) {
        throw std::runtime_error(std::string("CollectiveReduceShards ") + merge + "/" + final_op +
                                 " differs from the fold of every shard");
      }
    }
  }
  check_fused(world);
  if (world.rank() == 0) std::cout << "CollectiveReduceShards matches the fold on " << world.size() << " processes\n";
  return kExitSuccess;
}

// Each process gives 2 shards of four tensors, an empty one among them (the gradients fused into
// one exchange, whose slices cut across tensors): each output must be the reference's fold of
// that tensor over every process's shards, bit for bit.
void check_fused(const mpi::World& world) {
  constexpr int kLocal = 2;
  const std::vector<Shape> shapes = {Shape{3, 5}, Shape{0}, Shape{7}, Shape{}};
  const auto tensor = [&](int rank, int k, std::size_t t) { return seeded(shapes[t], 100 * rank + 10 * k + t); };
  Graph g;
  std::vector<std::vector<Output>> shards(kLocal);
  for (int k = 0; k < kLocal; ++k) {
    for (std::size_t t = 0; t < shapes.size(); ++t) shards[k].push_back(ops::constant(g, tensor(world.rank(), k, t)));
  }
  const std::vector<Output> reduced =
      ops::collective_reduce_shards(g, shards, {.group_size = world.size(), .final_op = "Div"});
  const std::vector<Tensor> got = Session(g).run({}, reduced);
  for (std::size_t t = 0; t < shapes.size(); ++t) {
    std::vector<Tensor> all;
    for (int r = 0; r < world.size(); ++r) {
      for (int k = 0; k < kLocal; ++k) all.push_back(tensor(r, k, t));
    }
    const Tensor want =
        run_op("CollectiveReduceShards", all, {{"group_size", std::int64_t{1}}, {"final_op", std::string("Div")}},
               {.backend = "reference"})
            .front();
    if (got[t].shape() != want.shape() || std::memcmp(got[t].raw_data(), want.raw_data(), want.nbytes()) != 0) {
      throw std::runtime_error("fused CollectiveReduceShards: tensor " + std::to_string(t) +
                               " differs from the fold of every shard");
    }
  }
}

// Each process gives 2 shards of [3, 5] on cuda:0 (host memory posing as a device, without a
// GPU): the "mpi" kernel for CUDA stages them through host memory, and its device result must be
// the CPU kernel's bits for the same shards.
int check_staged(const mpi::World& world) {
  static testing::FakeDeviceRuntime runtime;  // outlives the device tensors
  const testing::FakeCudaScope scope(runtime);
  for (const char* merge : {"Add", "Max"}) {
    std::vector<Tensor> on_host, on_device;
    for (int k = 0; k < 2; ++k) {
      on_host.push_back(seeded(Shape{3, 5}, 10 * world.rank() + k));
      on_device.push_back(on_host.back().to(Device::cuda()));
    }
    const AttrMap attrs{
        {"group_size", std::int64_t{world.size()}}, {"merge_op", std::string(merge)}, {"final_op", std::string("Div")}};
    const Tensor got = run_op("CollectiveReduceShards", on_device, attrs).front();
    if (got.device() != Device::cuda()) throw std::runtime_error("the staged result is not on the device");
    const Tensor want = run_op("CollectiveReduceShards", on_host, attrs).front();
    const Tensor got_host = got.to(Device::cpu());
    if (std::memcmp(got_host.raw_data(), want.raw_data(), want.nbytes()) != 0) {
      throw std::runtime_error(std::string("CollectiveReduceShards ") + merge + " staged from the device differs");
    }
  }
  if (world.rank() == 0)
    std::cout << "CollectiveReduceShards staged from a device matches on " << world.size() << " processes\n";
  return kExitSuccess;
}

// train_cnn's model on one micro-shard (or a whole batch): the loss.
Output cnn_loss(Graph& g, layers::VariableSet& vars, Output images, Output labels) {
  layers::Layers nn(g, vars, DType::Float32);
  Output x = nn.max_pool(nn.conv2d(images, "conv1", 32, 5));
  x = nn.max_pool(nn.conv2d(x, "conv2", 64, 5));
  x = nn.dense(nn.flatten(x), "dense1", 128, /*relu=*/true);
  return layers::classifier_metrics(g, nn.dense(x, "dense2", 10), labels).loss;
}

int speed(const mpi::World& world, const Args& a) {
  const ShardPlan plan =
      a.plain ? ShardPlan{.shard_rows = a.batch} : plan_shards(a.batch, a.shards, world.size(), world.rank());
  if (a.plain && world.size() != 1) throw std::invalid_argument("--plain 1 runs on one process");
  Graph g;
  layers::VariableSet vars(7);
  vars.reuse_variables(true);
  std::vector<Output> images, labels, losses;
  for (std::int64_t k = 0; k < plan.local_shards(); ++k) {
    images.push_back(ops::placeholder(g, DType::Float32, Shape{plan.shard_rows, 28, 28, 1}, "images"));
    labels.push_back(ops::placeholder(g, DType::Int32, Shape{plan.shard_rows}, "labels"));
    losses.push_back(cnn_loss(g, vars, images.back(), labels.back()));
  }
  OptimizerOptions options{.name = "adam"};
  if (!a.plain) {
    options.data_parallel = DataParallel{.group_size = world.size(), .shard_losses = losses, .bytes_per_pack = a.pack};
  }
  const Node& step = minimize(g, losses.size() == 1 ? losses[0] : ops::add_n(g, losses), vars, options);
  const Node& init = vars.initializer(g);
  Session session(g, {.threads = static_cast<int>(a.threads)});
  session.run({}, {}, {&init});
  world.broadcast_variables(session, vars);
  FeedMap feeds;
  for (std::int64_t k = 0; k < plan.local_shards(); ++k) {
    feeds[images[k]] = seeded(Shape{plan.shard_rows, 28, 28, 1}, 10 * world.rank() + k);
    feeds[labels[k]] = Tensor::zeros(DType::Int32, Shape{plan.shard_rows});
  }
  session.run(feeds, {}, {&step});  // compiles the plan and warms the allocator
  world.barrier();
  const auto start = std::chrono::steady_clock::now();
  for (std::int64_t s = 0; s < a.steps; ++s) session.run(feeds, {}, {&step});
  world.barrier();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // Then as many steps profiled: the collectives' share of a step (their exchange, and the wait
  // for the slower process), kept apart from the timing above.
  Session profiled(g, {.threads = static_cast<int>(a.threads), .profile = true});
  for (const Output& v : vars.all()) profiled.variables().set(v.op().name, session.variables().get(v.op().name));
  // Per step: the first collective (which also waits for the slower process) and the others.
  double first_us = 0, rest_us = 0, total_us = 0;
  for (std::int64_t s = 0; s < a.steps; ++s) {
    RunStats stats;
    profiled.run(feeds, {}, {&step}, &stats);
    if (s == 0) continue;  // it compiled the plan
    total_us += stats.profile.duration_us;
    bool first = true;
    for (const NodeTiming& node : stats.profile.nodes) {
      if (node.op != "CollectiveReduceShards") continue;
      (first ? first_us : rest_us) += node.duration_us;
      first = false;
    }
  }
  const auto per_mille = [&](double us) { return static_cast<std::uint64_t>(1000 * us / std::max(total_us, 1.0)); };
  const std::vector<std::uint64_t> first_shares = world.all_gather(per_mille(first_us));
  const std::vector<std::uint64_t> rest_shares = world.all_gather(per_mille(rest_us));
  if (world.rank() == 0) {
    std::cout << (a.plain ? "plain" : "data-parallel") << " batch " << a.batch << ", " << world.size()
              << " processes x " << (a.threads > 0 ? a.threads : num_threads()) << " threads"
              << (a.plain ? ""
                          : ", " + std::to_string(a.shards) + " micro-shards, " +
                                (a.pack > 0 ? "packs of " + std::to_string(a.pack) + " bytes" : "one pack"))
              << ": " << static_cast<double>(a.batch * a.steps) / seconds << " images/s";
    if (!a.plain) {
      std::cout << "; share of a step in the first collective (with the wait) / the others, by process:";
      for (int r = 0; r < world.size(); ++r) {
        std::cout << " " << static_cast<double>(first_shares[r]) / 10 << "%/"
                  << static_cast<double>(rest_shares[r]) / 10 << "%";
      }
    }
    std::cout << "\n";
  }
  return kExitSuccess;
}

// Process 0 gives a shard of another size than the others: the exchange's counts disagree, and
// MPI's error (a message longer than its buffer) must come back as a dagrad::Error naming the call.
int mismatch(const mpi::World& world) {
  Graph g;
  const std::int64_t size = world.rank() == 0 ? 4 : 64;
  Output reduced =
      ops::collective_reduce_shards(g, {ops::constant(g, seeded(Shape{size}, 1))}, {.group_size = world.size()});
  Session session(g);
  session.run({}, reduced);
  return kExitSuccess;
}

int check_group(const mpi::World& world) {
  int argc = 0;
  char** argv = nullptr;
  try {
    mpi::World second(&argc, &argv);
    throw std::runtime_error("a second mpi::World was accepted");
  } catch (const Error& e) {
    if (std::string(e.what()).find("MPI is already initialised") == std::string::npos) throw;
  }
  Graph g;
  Output reduced =
      ops::collective_reduce_shards(g, {ops::constant(g, seeded(Shape{2}, 1))}, {.group_size = world.size() + 1});
  Session session(g);
  try {
    session.run({}, reduced);
  } catch (const Error& e) {
    const std::string want = "group_size " + std::to_string(world.size() + 1) + " but the MPI job has " +
                             std::to_string(world.size()) + " processes";
    if (std::string(e.what()).find(want) == std::string::npos) throw;
    if (world.rank() == 0) std::cout << "refused: " << e.what() << "\n";
    return kExitSuccess;
  }
  throw std::runtime_error("a group_size unlike the job's size was accepted");
}

}  // namespace

int main(int argc, char** argv) {
  return run_main([&] {
    mpi::World world(&argc, &argv);
    const Args a = parse(argc, argv);
    if (a.mode == "train" || a.mode == "fail" || a.mode == "stall") return train(world, a);
    if (a.mode == "op") return check_op(world);
    if (a.mode == "staged") return check_staged(world);
    if (a.mode == "group") return check_group(world);
    if (a.mode == "speed") return speed(world, a);
    if (a.mode == "mismatch") return mismatch(world);
    throw std::invalid_argument("unknown mode " + a.mode);
  });
}
