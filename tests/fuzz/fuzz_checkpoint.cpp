// Fuzzes restore_checkpoint on a checkpoint directory whose files are cut from the input.
// Input: manifest.json, dense/kernel.npy and dense/bias.npy separated by the line "--next-file--";
// a missing part leaves that file out. Restored values must have the variables' dtypes and shapes.
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include <dagrad/core/checkpoint.hpp>
#include <dagrad/ops/state_ops.hpp>

#include "fuzz_support.hpp"

using namespace dagrad;

namespace {

const char kSeparator[] = "\n--next-file--\n";
const char* const kFiles[] = {"manifest.json", "dense/kernel.npy", "dense/bias.npy"};

struct Model {
  Graph graph;
  std::unique_ptr<Session> session;
  std::string dir;

  Model() {
    ops::variable(graph, Shape{2, 3}, DType::Float32, "dense/kernel");
    ops::variable(graph, Shape{3}, DType::BFloat16, "dense/bias");  // saved widened to float32
    session = std::make_unique<Session>(graph);
    char name[] = "/tmp/dagrad_fuzz_checkpoint_XXXXXX";
    if (mkdtemp(name) == nullptr) fuzz::finding("cannot create a temporary directory");
    dir = name;
  }
  ~Model() {  // at exit: leave no directory behind in /tmp
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
};

Model& model() {
  static Model m;
  return m;
}

void write_files(const std::string& dir, const std::string& input) {
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir + "/dense");
  std::size_t start = 0;
  for (const char* file : kFiles) {
    if (start > input.size()) break;
    std::size_t end = input.find(kSeparator, start);
    if (end == std::string::npos) end = input.size();
    std::ofstream(dir + "/" + file, std::ios::binary) << input.substr(start, end - start);
    start = end + sizeof kSeparator - 1;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Model& m = model();
  write_files(m.dir, fuzz::as_string(data, size));
  if (!fuzz::accepted([&] { restore_checkpoint(*m.session, m.graph, m.dir); })) return 0;
  const struct {
    const char* name;
    DType dtype;
    Shape shape;
  } expected[] = {{"dense/kernel", DType::Float32, Shape{2, 3}}, {"dense/bias", DType::BFloat16, Shape{3}}};
  for (const auto& v : expected) {
    const Tensor& value = m.session->variables().get(v.name);
    if (value.dtype() != v.dtype || value.shape() != v.shape) {
      fuzz::finding(std::string("restore_checkpoint set ") + v.name + " to " + std::string(dtype_name(value.dtype())) +
                    " " + value.shape().to_string());
    }
  }
  return 0;
}
