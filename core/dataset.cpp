// IDX image datasets: loading, slicing, gathering and seeded mini-batch order.
#include "dagrad/core/dataset.hpp"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <numeric>

#include "dagrad/core/idx.hpp"
#include "dagrad/core/random.hpp"

namespace dagrad {
namespace {

// "<dir>/<name>.gz" if present, else "<dir>/<name>"; NotFound naming both otherwise.
std::string find_file(const std::string& dir, const std::string& name) {
  const std::filesystem::path base = std::filesystem::path(dir) / name;
  std::error_code ec;
  for (const std::string& candidate : {base.string() + ".gz", base.string()}) {
    // Anything that exists is taken: a directory or a FIFO is then refused or read by name.
    if (std::filesystem::exists(candidate, ec)) return candidate;
  }
  fail(Code::NotFound, "dataset file not found: neither '", base.string(), ".gz' nor '", base.string(),
       "' exists (Fashion-MNIST comes with Debian's dataset-fashion-mnist package in ", kFashionMnistDir, ")");
}

std::int64_t row_size(const Tensor& t) { return t.shape()[0] == 0 ? 0 : t.num_elements() / t.shape()[0]; }

Tensor rows_of(const Tensor& t, const std::vector<std::int64_t>& indices) {
  std::vector<std::int64_t> dims = t.shape().dims();
  dims[0] = static_cast<std::int64_t>(indices.size());
  Tensor out = Tensor::empty(t.dtype(), Shape(dims));
  const std::size_t bytes = static_cast<std::size_t>(row_size(t)) * dtype_size(t.dtype());
  const auto* src = static_cast<const char*>(t.raw_data());
  auto* dst = static_cast<char*>(out.raw_data());
  for (std::size_t i = 0; i < indices.size(); ++i) {
    const std::int64_t r = indices[i];
    if (r < 0 || r >= t.shape()[0]) fail(Code::OutOfRange, "gather: row ", r, " out of range [0, ", t.shape()[0], ")");
    std::memcpy(dst + i * bytes, src + static_cast<std::size_t>(r) * bytes, bytes);
  }
  return out;
}

}  // namespace

ImageDataset load_idx_dataset(const std::string& dir, std::string_view split) {
  const std::string images_path = find_file(dir, str_cat(split, "-images-idx3-ubyte"));
  const std::string labels_path = find_file(dir, str_cat(split, "-labels-idx1-ubyte"));
  // Both headers are checked against each other before either body is read.
  IdxReader images_file = IdxReader::open(images_path);
  IdxReader labels_file = IdxReader::open(labels_path);
  const std::vector<std::int64_t>& image_dims = images_file.dims();
  const std::vector<std::int64_t>& label_dims = labels_file.dims();
  if (image_dims.size() != 3 && image_dims.size() != 4) {
    invalid_argument("'", images_path, "' must hold images of rank 3 or 4, got dims ", Shape(image_dims).to_string());
  }
  if (label_dims.size() != 1) {
    invalid_argument("'", labels_path, "' must hold a vector of labels, got dims ", Shape(label_dims).to_string());
  }
  if (label_dims[0] != image_dims[0]) {
    invalid_argument("'", labels_path, "' holds ", label_dims[0], " labels but '", images_path, "' holds ",
                     image_dims[0], " images");
  }
  const IdxArray labels = labels_file.read();
  const IdxArray images = images_file.read();
  std::vector<std::int64_t> dims = images.dims;
  if (dims.size() == 3) dims.push_back(1);
  ImageDataset data;
  data.images = Tensor::empty(DType::Float32, Shape(dims));
  float* px = data.images.data<float>();
  // Byte images are scaled to [0, 1]; other element types are taken as they are.
  const double scale = images.type == 0x08 ? 1.0 / 255.0 : 1.0;
  const std::int64_t pixels = images.num_elements();
  if (images.type == 0x08) {  // bytes as they lie (value() would decode each one), the same values
    const auto* bytes = reinterpret_cast<const unsigned char*>(images.bytes.data());
    for (std::int64_t i = 0; i < pixels; ++i) px[i] = static_cast<float>(static_cast<double>(bytes[i]) * scale);
  } else {
    for (std::int64_t i = 0; i < pixels; ++i) px[i] = static_cast<float>(images.value(i) * scale);
  }
  data.labels = Tensor::empty(DType::Int32, Shape{labels.dims[0]});
  std::int32_t* py = data.labels.data<std::int32_t>();
  const std::int64_t count = labels.num_elements();
  for (std::int64_t i = 0; i < count; ++i) {
    const double v = labels.value(i);
    if (v < 0 || v != static_cast<double>(static_cast<std::int32_t>(v))) {
      invalid_argument("'", labels_path, "' holds label ", v, " at index ", i,
                       "; labels must be non-negative integers");
    }
    py[i] = static_cast<std::int32_t>(v);
  }
  return data;
}

ImageDataset gather(const ImageDataset& data, const std::vector<std::int64_t>& indices) {
  return {rows_of(data.images, indices), rows_of(data.labels, indices)};
}

ImageDataset slice(const ImageDataset& data, std::int64_t begin, std::int64_t count) {
  if (begin < 0 || count < 0 || count > data.size() - begin) {
    fail(Code::OutOfRange, "slice: ", count, " rows from row ", begin, " are out of range [0, ", data.size(), ")");
  }
  std::vector<std::int64_t> rows(static_cast<std::size_t>(count));
  std::iota(rows.begin(), rows.end(), begin);
  return gather(data, rows);
}

BatchSampler::BatchSampler(std::int64_t num_examples, std::int64_t batch_size, std::uint64_t seed, bool shuffle)
    : num_examples_(num_examples), batch_size_(batch_size), seed_(seed), shuffle_(shuffle) {
  if (num_examples < 0) invalid_argument("BatchSampler: num_examples must be >= 0, got ", num_examples);
  if (batch_size <= 0) invalid_argument("BatchSampler: batch_size must be positive, got ", batch_size);
  start_epoch(0);
}

void BatchSampler::start_epoch(std::int64_t epoch) {
  order_.resize(static_cast<std::size_t>(num_examples_));
  std::iota(order_.begin(), order_.end(), std::int64_t{0});
  if (!shuffle_) return;
  SplitMix64 rng(seed_, static_cast<std::uint64_t>(epoch));
  for (std::size_t i = order_.size(); i > 1; --i) std::swap(order_[i - 1], order_[rng.below(i)]);
}

// Written without num_examples + batch_size - 1, which overflows for a huge batch size.
std::int64_t BatchSampler::num_batches() const {
  return num_examples_ / batch_size_ + (num_examples_ % batch_size_ != 0 ? 1 : 0);
}

std::vector<std::int64_t> BatchSampler::batch(std::int64_t index) const {
  if (index < 0 || index >= num_batches())
    fail(Code::OutOfRange, "BatchSampler: batch ", index, " out of range [0, ", num_batches(), ")");
  // index < num_batches(), so begin < num_examples_ and neither sum below overflows.
  const std::int64_t begin = index * batch_size_, end = begin + std::min(batch_size_, num_examples_ - begin);
  return {order_.begin() + begin, order_.begin() + end};
}

}  // namespace dagrad
