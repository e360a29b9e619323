// End-to-end training on a slice of Fashion-MNIST: the loss falls and accuracy beats chance by
// far; training is deterministic; a checkpoint restores identical predictions; minimize() and
// checkpoint errors.
#include <catch2/catch.hpp>

#include <unistd.h>
#include <cmath>
#include <filesystem>
#include <memory>

#include <dagrad/core/checkpoint.hpp>

#include "support/small_cnn.hpp"
#include "support/temp_dir.hpp"

using namespace dagrad;
namespace fs = std::filesystem;

namespace {

using Cnn = testing::SmallCnn;

using dagrad::testing::TempDir;

bool have_data() { return fs::exists(fs::path(kFashionMnistDir) / "t10k-images-idx3-ubyte.gz"); }

const ImageDataset& test_split() {
  static const ImageDataset data = load_idx_dataset(kFashionMnistDir, "t10k");
  return data;
}

// Trains for `epochs` over `train` in batches of 50 and returns the loss of every step.
std::vector<float> train(Cnn& m, Session& s, const ImageDataset& data, int epochs) {
  s.run({}, {}, {m.init});
  BatchSampler sampler(data.size(), 50, 7);
  std::vector<float> losses;
  for (int e = 0; e < epochs; ++e) {
    sampler.start_epoch(e);
    for (std::int64_t b = 0; b < sampler.num_batches(); ++b) {
      const ImageDataset batch = gather(data, sampler.batch(b));
      losses.push_back(s.run(m.feed(batch), {m.loss}, {m.step})[0].data<float>()[0]);
    }
  }
  return losses;
}

double mean_of(const std::vector<float>& v, std::size_t begin, std::size_t end) {
  double sum = 0;
  for (std::size_t i = begin; i < end; ++i) sum += v[i];
  return sum / static_cast<double>(end - begin);
}

}  // namespace

TEST_CASE("a small CNN learns a slice of Fashion-MNIST", "[train]") {
  if (!have_data()) {
    WARN("Fashion-MNIST is not installed under " << kFashionMnistDir << "; skipped");
    return;
  }
  const ImageDataset train_part = slice(test_split(), 0, 2000);
  const ImageDataset held_out = slice(test_split(), 9000, 1000);
  Cnn m(1, 8, "adam", 0.003);
  Session s(m.g);
  const std::vector<float> losses = train(m, s, train_part, 2);
  const double first = mean_of(losses, 0, 10), last = mean_of(losses, losses.size() - 10, losses.size());
  INFO("mean loss of the first 10 steps " << first << ", of the last 10 " << last);
  CHECK(first > 1.5);  // about ln(10) at the start
  CHECK(last < 0.6 * first);
  const float accuracy = s.run(m.feed(held_out), m.accuracy).data<float>()[0];
  INFO("held-out accuracy " << accuracy);
  CHECK(accuracy > 0.6f);  // chance is 0.1
}

TEST_CASE("bfloat16 mixed-precision training keeps float32 weights and learns as float32 does", "[train]") {
  if (!have_data()) {
    WARN("Fashion-MNIST is not installed under " << kFashionMnistDir << "; skipped");
    return;
  }
  const ImageDataset train_part = slice(test_split(), 0, 2000);
  const ImageDataset held_out = slice(test_split(), 9000, 1000);
  Cnn mixed(1, 8, "adam", 0.003, DType::BFloat16), plain(1, 8, "adam", 0.003);
  for (const Output& v : mixed.vars.all()) CHECK(v.dtype() == DType::Float32);  // weights, slots, counters
  CHECK(mixed.logits.dtype() == DType::BFloat16);
  CHECK(mixed.loss.dtype() == DType::Float32);
  Session s_mixed(mixed.g), s_plain(plain.g);
  train(mixed, s_mixed, train_part, 2);
  train(plain, s_plain, train_part, 2);
  const float accuracy_mixed = s_mixed.run(mixed.feed(held_out), mixed.accuracy).data<float>()[0];
  const float accuracy_plain = s_plain.run(plain.feed(held_out), plain.accuracy).data<float>()[0];
  INFO("held-out accuracy: bfloat16 " << accuracy_mixed << ", float32 " << accuracy_plain);
  CHECK(accuracy_mixed > 0.6f);
  CHECK(std::abs(accuracy_mixed - accuracy_plain) < 0.03f);  // 30 of the 1000 held-out images
}

TEST_CASE("training is deterministic for a seed; optimisers all lower the loss", "[train]") {
  if (!have_data()) return;
  const ImageDataset part = slice(test_split(), 0, 500);
  for (const char* optimizer : {"sgd", "momentum", "nesterov", "adam"}) {
    INFO(optimizer);
    const double lr = std::string(optimizer) == "adam" ? 0.003 : 0.05;
    Cnn a(3, 4, optimizer, lr), b(3, 4, optimizer, lr);
    Session sa(a.g), sb(b.g);
    const auto la = train(a, sa, part, 1);
    const auto lb = train(b, sb, part, 1);
    CHECK(la == lb);  // bitwise: same seed, same thread count
    CHECK(mean_of(la, la.size() - 3, la.size()) < mean_of(la, 0, 3));
  }
}

TEST_CASE("checkpoints restore identical predictions and reject mismatches", "[train]") {
  if (!have_data()) return;
  const ImageDataset part = slice(test_split(), 0, 300);
  const ImageDataset probe = slice(test_split(), 5000, 100);
  TempDir dir;
  Cnn trained(5, 4, "momentum", 0.05);
  Session s(trained.g);
  train(trained, s, part, 1);
  save_checkpoint(s, trained.g, dir.path.string());
  CHECK(fs::exists(dir.path / "conv1" / "kernel.npy"));
  CHECK(fs::exists(dir.path / "dense" / "bias" / "Momentum.npy"));
  const Tensor expected = s.run(trained.feed(probe), trained.logits);

  Cnn fresh(99, 4, "momentum", 0.05);  // another seed: different initial values
  Session s2(fresh.g);
  s2.run({}, {}, {fresh.init});
  CHECK(std::memcmp(s2.run(fresh.feed(probe), fresh.logits).raw_data(), expected.raw_data(), expected.nbytes()) != 0);
  restore_checkpoint(s2, fresh.g, dir.path.string());
  const Tensor restored = s2.run(fresh.feed(probe), fresh.logits);
  CHECK(std::memcmp(restored.raw_data(), expected.raw_data(), expected.nbytes()) == 0);

  Cnn wider(5, 6, "momentum", 0.05);
  Session s3(wider.g);
  CHECK_THROWS_WITH(restore_checkpoint(s3, wider.g, dir.path.string()),
                    Catch::Contains("holds shape [5,5,1,4] but variable 'conv1/kernel' has shape [5,5,1,6]"));
  fs::remove(dir.path / "dense" / "kernel.npy");
  CHECK_THROWS_WITH(restore_checkpoint(s2, fresh.g, dir.path.string()),
                    Catch::Contains("has no file 'kernel.npy' for variable 'dense/kernel'"));
  CHECK_THROWS_WITH(restore_checkpoint(s2, fresh.g, (dir.path / "nope").string()), Catch::Contains("does not exist"));
}

TEST_CASE("minimize rejects bad options; glorot_uniform is seeded and bounded", "[train]") {
  Graph g;
  layers::VariableSet vars(1);
  Output w = vars.create_glorot(g, "w", Shape{300, 200}, 300, 200);
  Output loss = ops::reduce_sum_all(g, ops::mul(g, w, w));
  CHECK_THROWS_WITH(minimize(g, loss, vars, {.name = "adagrad"}), Catch::Contains("unknown optimizer 'adagrad'"));
  CHECK_THROWS_WITH(minimize(g, w, vars, {}), Catch::Contains("the loss must be a scalar"));
  const Tensor a = layers::glorot_uniform(Shape{300, 200}, 300, 200, 17);
  const Tensor b = layers::glorot_uniform(Shape{300, 200}, 300, 200, 17);
  const Tensor c = layers::glorot_uniform(Shape{300, 200}, 300, 200, 18);
  CHECK(std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0);
  CHECK(std::memcmp(a.raw_data(), c.raw_data(), a.nbytes()) != 0);
  const double limit = std::sqrt(6.0 / 500);
  double sum = 0, max_abs = 0;
  for (std::int64_t i = 0; i < a.num_elements(); ++i) {
    sum += a.data<float>()[i];
    max_abs = std::max(max_abs, std::abs(static_cast<double>(a.data<float>()[i])));
  }
  CHECK(max_abs <= limit);
  CHECK(max_abs > 0.99 * limit);
  CHECK(std::abs(sum / 60000) < 0.01 * limit);
}
