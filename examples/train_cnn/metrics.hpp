// Training metrics as a file for other tools: one row per finished epoch, as CSV or JSON (chosen by
// the file's extension), rewritten whole after every epoch.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace train_cnn {

struct EpochMetrics {
  std::int64_t epoch = 0;  // 1-based
  std::int64_t step = 0;   // training steps done at the epoch's end
  double train_loss = 0, train_accuracy = 0, test_loss = 0, test_accuracy = 0;
  // Measured in this process only: unknown for the epochs a resumed run read from its checkpoint.
  std::optional<double> images_per_second, seconds;
};

enum class MetricsFormat { Csv, Json };

// The format `path` asks for by its extension (.csv, .json), or nothing.
std::optional<MetricsFormat> metrics_format(const std::string& path);

// Writes `epochs` to `path` (whole or not at all); throws dagrad::Error naming the file if it
// cannot be written or its extension is neither .csv nor .json. CSV: a header line, then one line
// per epoch, unknown values left empty; JSON: {"epochs": [{...}, ...]}, unknown values null.
// Numbers are the shortest decimals that read back as the same double.
void write_metrics(const std::string& path, const std::vector<EpochMetrics>& epochs);

}  // namespace train_cnn
