// Progress <-> checkpoint metadata: integers in decimal, doubles as exact hexadecimal floats.
#include "training_state.hpp"

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include <dagrad/core/error.hpp>

namespace train_cnn {
namespace {

std::string exact(double v) {
  char text[64];
  std::snprintf(text, sizeof text, "%a", v);
  return text;
}

// The shortest decimal that reads back as `v`: exact and readable in messages.
std::string shortest(double v) {
  char text[64];
  const auto result = std::to_chars(text, text + sizeof text, v);
  return std::string(text, result.ptr);
}

std::string exact_list(const std::vector<double>& values) {
  std::string text;
  for (double v : values) {
    if (!text.empty()) text += ',';
    text += exact(v);  // not `"," + exact(v)`, over which GCC 12 warns (-Wrestrict, a false alarm)
  }
  return text;
}

// Reads the metadata of one checkpoint, each failure naming the checkpoint and the key.
class MetadataReader {
 public:
  MetadataReader(const dagrad::CheckpointInfo& info, const std::string& dir) : info_(info), dir_(dir) {}

  const std::string& text(const std::string& key) const {
    const auto it = info_.metadata.find(key);
    if (it == info_.metadata.end()) {
      dagrad::invalid_argument("checkpoint '", dir_, "' has no training state '", key,
                               "' (was it saved by train_cnn --save?)");
    }
    return it->second;
  }
  std::int64_t integer(const std::string& key, std::int64_t min, std::int64_t max) const {
    const std::string& t = text(key);
    std::int64_t v = 0;
    const auto [end, error] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (error != std::errc() || end != t.data() + t.size() || v < min || v > max) {
      dagrad::invalid_argument("checkpoint '", dir_, "': training state '", key, "' is '", t,
                               "', expected an integer in [", min, ", ", max, "]");
    }
    return v;
  }
  double number(const std::string& key, const std::string& t) const {
    char* end = nullptr;
    const double v = std::strtod(t.c_str(), &end);
    if (t.empty() || end != t.c_str() + t.size()) {
      dagrad::invalid_argument("checkpoint '", dir_, "': training state '", key, "' holds '", t,
                               "', expected a number");
    }
    return v;
  }
  double number(const std::string& key) const { return number(key, text(key)); }
  std::vector<double> numbers(const std::string& key) const {
    const std::string& t = text(key);
    std::vector<double> values;
    for (std::size_t begin = 0; begin < t.size();) {
      const std::size_t comma = std::min(t.find(',', begin), t.size());
      values.push_back(number(key, t.substr(begin, comma - begin)));
      begin = comma + 1;
    }
    return values;
  }
  // A setting the resumed run must share with the saved one.
  void same(const std::string& option, const std::string& key, const std::string& now) const {
    const std::string& saved = text(key);
    if (saved != now) {
      dagrad::invalid_argument("checkpoint '", dir_, "' was trained with ", option, " ", saved, " but this run has ",
                               option, " ", now, "; resume with the same setting");
    }
  }

 private:
  const dagrad::CheckpointInfo& info_;
  const std::string& dir_;
};

// Only data-parallel runs record it (checkpoints of ordinary runs predate it).
const std::string kShardsKey = "train_cnn/shards";

// How a shard count reads in a message: "--data-parallel --shards 4", or not data-parallel.
std::string shards_setting(std::int64_t shards) {
  return shards > 0 ? "--data-parallel --shards " + std::to_string(shards) : "no --data-parallel";
}

struct SettingEntry {
  std::string key, option, value;
};

// The settings in the form they are saved and compared.
std::vector<SettingEntry> setting_entries(const RunSettings& s) {
  return {{"train_cnn/optimizer", "--optimizer", s.optimizer},
          {"train_cnn/lr", "--lr", shortest(s.learning_rate)},
          {"train_cnn/batch_size", "--batch-size", std::to_string(s.batch_size)},
          {"train_cnn/seed", "--seed", std::to_string(s.seed)},
          {"train_cnn/precision", "--precision", s.precision},
          {"train_cnn/train_images", "training images (--data, --limit):", std::to_string(s.train_images)}};
}

}  // namespace

void Progress::start_next_epoch() {
  ++epoch;
  batch = 0;
  loss_sum = correct = 0;
  seen = 0;
}

dagrad::CheckpointInfo checkpoint_info(const Progress& p, const RunSettings& settings) {
  dagrad::CheckpointInfo info{.step = p.step};
  auto& m = info.metadata;
  m["train_cnn/epoch"] = std::to_string(p.epoch);
  m["train_cnn/batch"] = std::to_string(p.batch);
  m["train_cnn/seen"] = std::to_string(p.seen);
  m["train_cnn/loss_sum"] = exact(p.loss_sum);
  m["train_cnn/correct"] = exact(p.correct);
  m["train_cnn/train_loss"] = exact_list(p.train_loss);
  m["train_cnn/train_accuracy"] = exact_list(p.train_accuracy);
  m["train_cnn/test_loss"] = exact_list(p.test_loss);
  m["train_cnn/test_accuracy"] = exact_list(p.test_accuracy);
  for (const SettingEntry& e : setting_entries(settings)) m[e.key] = e.value;
  if (settings.shards > 0) m[kShardsKey] = std::to_string(settings.shards);
  return info;
}

Progress progress_from_checkpoint(const dagrad::CheckpointInfo& info, const RunSettings& settings,
                                  std::int64_t batches_per_epoch, const std::string& dir) {
  const MetadataReader r(info, dir);
  for (const SettingEntry& e : setting_entries(settings)) r.same(e.option, e.key, e.value);
  const std::int64_t saved_shards =
      info.metadata.count(kShardsKey) != 0 ? r.integer(kShardsKey, 1, std::numeric_limits<std::int64_t>::max()) : 0;
  if (saved_shards != settings.shards) {
    dagrad::invalid_argument("checkpoint '", dir, "' was trained with ", shards_setting(saved_shards),
                             " but this run has ", shards_setting(settings.shards),
                             "; resume with the same micro-shards (another count of processes is fine)");
  }
  Progress p;
  p.step = info.step;
  p.epoch = r.integer("train_cnn/epoch", 0, INT32_MAX);
  p.batch =
      r.integer("train_cnn/batch", 0, batches_per_epoch - 1);  // a finished epoch is saved as the next one's batch 0
  p.seen = r.integer("train_cnn/seen", 0, settings.train_images);
  p.loss_sum = r.number("train_cnn/loss_sum");
  p.correct = r.number("train_cnn/correct");
  p.train_loss = r.numbers("train_cnn/train_loss");
  p.train_accuracy = r.numbers("train_cnn/train_accuracy");
  p.test_loss = r.numbers("train_cnn/test_loss");
  p.test_accuracy = r.numbers("train_cnn/test_accuracy");
  const auto epochs = static_cast<std::size_t>(p.epoch);
  if (p.train_loss.size() != epochs || p.train_accuracy.size() != epochs || p.test_loss.size() != epochs ||
      p.test_accuracy.size() != epochs) {
    dagrad::invalid_argument("checkpoint '", dir, "': training state has ", p.train_loss.size(),
                             " epochs of curves for ", p.epoch, " finished epochs");
  }
  return p;
}

// Length-prefixed fields: "<bytes>:<text>" for the step, then each key and its value.
std::string encode_checkpoint_info(const dagrad::CheckpointInfo& info) {
  std::string bytes;
  auto field = [&](const std::string& text) { bytes += std::to_string(text.size()) + ":" + text; };
  field(std::to_string(info.step));
  for (const auto& [key, value] : info.metadata) field(key), field(value);
  return bytes;
}

dagrad::CheckpointInfo decode_checkpoint_info(const std::string& bytes) {
  std::size_t at = 0;
  auto field = [&] {
    const std::size_t colon = bytes.find(':', at);
    std::size_t size = 0;
    const auto [end, error] = std::from_chars(bytes.data() + at, bytes.data() + std::min(colon, bytes.size()), size);
    if (colon == std::string::npos || error != std::errc() || end != bytes.data() + colon ||
        size > bytes.size() - colon - 1) {
      dagrad::fail(dagrad::Code::Internal, "train_cnn: malformed checkpoint info received at byte ", at);
    }
    at = colon + 1 + size;
    return bytes.substr(colon + 1, size);
  };
  dagrad::CheckpointInfo info;
  const std::string step = field();
  info.step = std::stoll(step);
  while (at < bytes.size()) {
    std::string key = field();
    info.metadata[std::move(key)] = field();
  }
  return info;
}

}  // namespace train_cnn
