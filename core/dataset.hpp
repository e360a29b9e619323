// Image-classification datasets stored as IDX files (MNIST, Fashion-MNIST, ...) and shuffled
// mini-batches with a fixed seed.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "dagrad/core/tensor.hpp"

namespace dagrad {

// Fashion-MNIST as Debian's dataset-fashion-mnist package installs it.
inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

struct ImageDataset {
  Tensor images;  // float32 [N, rows, cols, channels], pixel values scaled to [0, 1]
  Tensor labels;  // int32 [N]
  std::int64_t size() const { return labels.defined() ? labels.num_elements() : 0; }
};

// Loads <dir>/<split>-images-idx3-ubyte and <dir>/<split>-labels-idx1-ubyte, each gzipped (.gz)
// or plain; split is "train" or "t10k" for the MNIST family. Images of rank 3 get one channel.
// Throws NotFound naming both candidate paths, InvalidArgument on corrupt or mismatched files.
ImageDataset load_idx_dataset(const std::string& dir, std::string_view split);

// Rows `indices` of a dataset (a mini-batch), copied.
ImageDataset gather(const ImageDataset& data, const std::vector<std::int64_t>& indices);
// The contiguous rows [begin, begin + count).
ImageDataset slice(const ImageDataset& data, std::int64_t begin, std::int64_t count);

// Mini-batch order: a seeded Fisher-Yates permutation per epoch, the same for a given
// (seed, epoch) on every platform. The last batch may be smaller.
class BatchSampler {
 public:
  BatchSampler(std::int64_t num_examples, std::int64_t batch_size, std::uint64_t seed, bool shuffle = true);
  void start_epoch(std::int64_t epoch);
  std::int64_t num_batches() const;
  std::vector<std::int64_t> batch(std::int64_t index) const;

 private:
  std::int64_t num_examples_, batch_size_;
  std::uint64_t seed_;
  bool shuffle_;
  std::vector<std::int64_t> order_;
};

}  // namespace dagrad
