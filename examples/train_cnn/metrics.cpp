// Metrics files: CSV by hand (one line a row), JSON through nlohmann-json; both through
// dagrad::write_file, so a reader sees the previous epoch's file or this one, never a part.
#include "metrics.hpp"

#include <charconv>
#include <cmath>

#include <nlohmann/json.hpp>

#include <dagrad/core/error.hpp>
#include <dagrad/core/file_io.hpp>

namespace train_cnn {
namespace {

// The columns, in order, with how each is read from a row: one table for both formats.
struct Column {
  const char* name;
  std::optional<double> (*value)(const EpochMetrics&);
};
const Column kColumns[] = {
    {"epoch", [](const EpochMetrics& m) -> std::optional<double> { return static_cast<double>(m.epoch); }},
    {"step", [](const EpochMetrics& m) -> std::optional<double> { return static_cast<double>(m.step); }},
    {"train_loss", [](const EpochMetrics& m) -> std::optional<double> { return m.train_loss; }},
    {"train_accuracy", [](const EpochMetrics& m) -> std::optional<double> { return m.train_accuracy; }},
    {"test_loss", [](const EpochMetrics& m) -> std::optional<double> { return m.test_loss; }},
    {"test_accuracy", [](const EpochMetrics& m) -> std::optional<double> { return m.test_accuracy; }},
    {"images_per_second", [](const EpochMetrics& m) { return m.images_per_second; }},
    {"seconds", [](const EpochMetrics& m) { return m.seconds; }},
};

// The shortest decimal that reads back as `v` ("nan", "inf" for those).
std::string shortest(double v) {
  char text[64];
  const auto result = std::to_chars(text, text + sizeof text, v);
  return std::string(text, result.ptr);
}

std::string to_csv(const std::vector<EpochMetrics>& epochs) {
  std::string out;
  for (const Column& c : kColumns) {
    if (!out.empty()) out += ',';
    out += c.name;
  }
  out += '\n';
  for (const EpochMetrics& m : epochs) {
    for (std::size_t i = 0; i < std::size(kColumns); ++i) {
      if (i > 0) out += ',';
      if (const std::optional<double> v = kColumns[i].value(m)) out += shortest(*v);
    }
    out += '\n';
  }
  return out;
}

std::string to_json(const std::vector<EpochMetrics>& epochs) {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const EpochMetrics& m : epochs) {
    nlohmann::ordered_json row;
    row["epoch"] = m.epoch;
    row["step"] = m.step;
    for (std::size_t i = 2; i < std::size(kColumns); ++i) {
      const std::optional<double> v = kColumns[i].value(m);
      // JSON has no NaN or infinity: a diverged loss is written as null, like an unknown value.
      row[kColumns[i].name] = v && std::isfinite(*v) ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr);
    }
    rows.push_back(std::move(row));
  }
  return nlohmann::ordered_json{{"epochs", std::move(rows)}}.dump(2) + "\n";
}

}  // namespace

std::optional<MetricsFormat> metrics_format(const std::string& path) {
  auto ends_with = [&](std::string_view suffix) {
    return path.size() > suffix.size() && path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (ends_with(".csv")) return MetricsFormat::Csv;
  if (ends_with(".json")) return MetricsFormat::Json;
  return std::nullopt;
}

void write_metrics(const std::string& path, const std::vector<EpochMetrics>& epochs) {
  const std::optional<MetricsFormat> format = metrics_format(path);
  if (!format) dagrad::invalid_argument("metrics file '", path, "' must end in .csv or .json");
  const std::string text = *format == MetricsFormat::Csv ? to_csv(epochs) : to_json(epochs);
  dagrad::write_file(path, [&](dagrad::OutputFile& out) { out.write(text); });
}

}  // namespace train_cnn
