// Saving and restoring session variables as .npy files, checked against the graph.
#include "dagrad/core/checkpoint.hpp"

#include <filesystem>

#include "dagrad/core/npy.hpp"

namespace dagrad {
namespace {

struct VariableInfo {
  std::string name;
  DType dtype;
  Shape shape;
};

std::vector<VariableInfo> graph_variables(const Graph& graph) {
  std::vector<VariableInfo> vars;
  for (int id = 0; id < graph.num_nodes(); ++id) {
    const Node& n = graph.node(id);
    if (n.op() != "VariableV2") continue;
    const auto& shared = get_attr<std::string>(n.attrs, "shared_name");
    vars.push_back({shared.empty() ? n.name : shared, n.output_dtypes[0], n.output_shapes[0]});
  }
  return vars;
}

std::filesystem::path file_for(const std::string& dir, const std::string& name) {
  if (name.empty() || name.find("..") != std::string::npos || name.front() == '/') {
    invalid_argument("checkpoint: variable name '", name, "' cannot be used as a file name");
  }
  return std::filesystem::path(dir) / (name + ".npy");
}

}  // namespace

std::vector<std::string> variable_names(const Graph& graph) {
  std::vector<std::string> names;
  for (const auto& v : graph_variables(graph)) names.push_back(v.name);
  return names;
}

void save_checkpoint(Session& session, const Graph& graph, const std::string& dir) {
  for (const auto& v : graph_variables(graph)) {
    const Tensor& value = session.variables().get(v.name);  // throws for uninitialised variables
    const std::filesystem::path path = file_for(dir, v.name);
    std::error_code ec;
    std::filesystem::create_directories(path.parent_path(), ec);
    if (ec) fail(Code::NotFound, "checkpoint: cannot create directory '", path.parent_path().string(), "': ", ec.message());
    write_npy(path.string(), value.device().is_cpu() ? value : value.to(Device::cpu()));
  }
}

void restore_checkpoint(Session& session, const Graph& graph, const std::string& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) fail(Code::NotFound, "checkpoint directory '", dir, "' does not exist");
  std::vector<std::pair<std::string, Tensor>> loaded;
  for (const auto& v : graph_variables(graph)) {
    const std::filesystem::path path = file_for(dir, v.name);
    if (!std::filesystem::is_regular_file(path, ec)) {
      fail(Code::NotFound, "checkpoint '", dir, "' has no file '", path.filename().string(), "' for variable '", v.name,
           "' (expected ", path.string(), ")");
    }
    Tensor value = read_npy(path.string());
    // .npy has no bfloat16: such variables were saved widened to float32.
    if (value.dtype() != v.dtype && v.dtype == DType::BFloat16 && value.dtype() == DType::Float32) {
      value = value.cast(DType::BFloat16);
    }
    if (value.dtype() != v.dtype) {
      invalid_argument("checkpoint file '", path.string(), "' holds ", dtype_name(value.dtype()), " but variable '",
                       v.name, "' is ", dtype_name(v.dtype));
    }
    if (!v.shape.is_compatible_with(value.shape())) {
      invalid_argument("checkpoint file '", path.string(), "' holds shape ", value.shape().to_string(),
                       " but variable '", v.name, "' has shape ", v.shape.to_string());
    }
    loaded.emplace_back(v.name, std::move(value));
  }
  const Device device = session.options().device;
  for (auto& [name, value] : loaded) session.variables().set(name, device.is_cpu() ? value : value.to(device));
}

}  // namespace dagrad
