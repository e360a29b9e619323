// Saving and restoring session variables: a checkpoint directory written whole beside its target
// and swapped into place, and a restore that verifies everything before changing anything.
#include "dagrad/core/checkpoint.hpp"

#include <zlib.h>

#include <cstdio>
#include <filesystem>

#include "dagrad/core/checked.hpp"
#include "dagrad/core/checkpoint_manifest.hpp"
#include "dagrad/core/file_io.hpp"
#include "dagrad/core/npy.hpp"
#include "dagrad/core/staged_directory.hpp"

namespace dagrad {
namespace {

namespace fs = std::filesystem;

// The largest .npy header (version 1: 10 bytes of preamble, a 16-bit header length) and the
// largest manifest a restore reads.
constexpr std::int64_t kMaxNpyHeaderBytes = 10 + 65535;
constexpr std::size_t kMaxManifestBytes = std::size_t{64} << 20;

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

// .npy has no bfloat16: such variables are stored widened to float32.
DType stored_dtype(DType dtype) { return dtype == DType::BFloat16 ? DType::Float32 : dtype; }

std::uint32_t crc32_of(const std::string& bytes) {
  return static_cast<std::uint32_t>(
      crc32_z(crc32_z(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(bytes.data()), bytes.size()));
}

// Writes every file of the checkpoint into the empty directory `staged`; the manifest last.
void write_checkpoint_files(Session& session, const Graph& graph, const fs::path& staged, const CheckpointInfo& info) {
  Manifest manifest{.step = info.step, .metadata = info.metadata};
  std::vector<fs::path> directories;  // made below `staged`, synced once written
  for (const VariableInfo& v : graph_variables(graph)) {
    const Tensor& value = session.variables().get(v.name);  // throws for uninitialised variables
    const std::string file = checkpoint_file_for(v.name);
    const fs::path path = staged / file;
    for (fs::path d = path.parent_path(); d != staged && !fs::exists(d); d = d.parent_path()) directories.push_back(d);
    fs::create_directories(path.parent_path());
    const std::string bytes = serialize_npy(value.device().is_cpu() ? value : value.to(Device::cpu()));
    OutputFile out(path.string());
    out.write(bytes);
    out.close();
    manifest.variables.push_back({.name = v.name,
                                  .dtype = value.dtype(),
                                  .shape = value.shape(),
                                  .file = file,
                                  .bytes = static_cast<std::int64_t>(bytes.size()),
                                  .crc32 = crc32_of(bytes)});
  }
  OutputFile out((staged / kCheckpointManifestFile).string());
  out.write(manifest_to_json(manifest));
  out.close();
  for (const fs::path& d : directories) sync_directory(d, "checkpoint");
}

const ManifestEntry& entry_for(const Manifest& manifest, const VariableInfo& v, const std::string& manifest_path) {
  for (const ManifestEntry& e : manifest.variables) {
    if (e.name != v.name) continue;
    if (e.dtype != v.dtype) {
      invalid_argument("checkpoint '", manifest_path, "' holds ", dtype_name(e.dtype), " but variable '", v.name,
                       "' is ", dtype_name(v.dtype));
    }
    if (!v.shape.is_compatible_with(e.shape)) {
      invalid_argument("checkpoint '", manifest_path, "' holds shape ", e.shape.to_string(), " but variable '", v.name,
                       "' has shape ", v.shape.to_string());
    }
    return e;
  }
  fail(Code::NotFound, "Key ", v.name, " not found in checkpoint '", manifest_path, "'");
}

// Reads one variable's file, refusing it unless its size and checksum are the manifest's and its
// contents match the manifest's dtype and shape. Never reads more than the manifest promises.
Tensor read_variable(const fs::path& dir, const ManifestEntry& e) {
  const std::string path = (dir / e.file).string();
  const DType stored = stored_dtype(e.dtype);
  const std::int64_t most = checked_add(
      static_cast<std::int64_t>(checked_bytes(e.shape.num_elements(), dtype_size(stored), "checkpoint variable bytes")),
      kMaxNpyHeaderBytes, "checkpoint variable bytes");
  if (e.bytes > most) {
    invalid_argument("checkpoint manifest promises ", e.bytes, " bytes for '", path, "' (variable '", e.name,
                     "') but shape ", e.shape.to_string(), " needs at most ", most);
  }
  std::error_code ec;
  const std::uintmax_t size = fs::file_size(path, ec);
  if (ec) {
    fail(Code::NotFound, "checkpoint '", dir.string(), "' has no file '", fs::path(path).filename().string(),
         "' for variable '", e.name, "' (expected ", path, ")");
  }
  if (size != static_cast<std::uintmax_t>(e.bytes)) {
    invalid_argument("checkpoint file '", path, "' of variable '", e.name, "' has ", size, " bytes; the manifest says ",
                     e.bytes, size < static_cast<std::uintmax_t>(e.bytes) ? " (truncated)" : "");
  }
  const std::string bytes = read_file_limited(path, static_cast<std::size_t>(e.bytes), "checkpoint file");
  if (bytes.size() != static_cast<std::size_t>(e.bytes)) {
    invalid_argument("checkpoint file '", path, "' of variable '", e.name, "' shrank to ", bytes.size(),
                     " bytes while being read; the manifest says ", e.bytes);
  }
  const std::uint32_t crc = crc32_of(bytes);
  if (crc != e.crc32) {
    char found[16], expected[16];
    std::snprintf(found, sizeof found, "%08x", crc);
    std::snprintf(expected, sizeof expected, "%08x", e.crc32);
    invalid_argument("checkpoint file '", path, "' of variable '", e.name, "' is corrupt: crc32 ", found,
                     ", the manifest says ", expected);
  }
  Tensor value = parse_npy(bytes, path);
  if (value.dtype() != stored || value.shape() != e.shape) {
    invalid_argument("checkpoint file '", path, "' holds ", dtype_name(value.dtype()), " ", value.shape().to_string(),
                     " but the manifest says variable '", e.name, "' is ", dtype_name(stored), " ",
                     e.shape.to_string());
  }
  return stored == e.dtype ? value : value.cast(e.dtype);
}

}  // namespace

std::vector<std::string> variable_names(const Graph& graph) {
  std::vector<std::string> names;
  for (const auto& v : graph_variables(graph)) names.push_back(v.name);
  return names;
}

void save_checkpoint(Session& session, const Graph& graph, const std::string& dir, const CheckpointInfo& info) {
  if (info.step < 0) invalid_argument("checkpoint: the step must be >= 0, got ", info.step);
  for (const VariableInfo& v : graph_variables(graph)) checkpoint_file_for(v.name);  // refuse bad names first
  write_directory_whole(dir, "checkpoint", kCheckpointManifestFile,
                        [&](const fs::path& staged) { write_checkpoint_files(session, graph, staged, info); });
}

CheckpointInfo restore_checkpoint(Session& session, const Graph& graph, const std::string& dir) {
  const fs::path root = directory_to_read(dir, "checkpoint", kCheckpointManifestFile);
  const std::string manifest_path = (root / kCheckpointManifestFile).string();
  std::error_code ec;
  if (!fs::is_regular_file(manifest_path, ec)) {
    fail(Code::NotFound, "checkpoint '", dir, "' has no ", kCheckpointManifestFile,
         " (not a checkpoint, or one saved by a dagrad without manifests)");
  }
  const Manifest manifest =
      parse_manifest(read_file_limited(manifest_path, kMaxManifestBytes, "checkpoint manifest"), manifest_path);
  const std::vector<VariableInfo> vars = graph_variables(graph);
  std::vector<const ManifestEntry*> entries;
  for (const VariableInfo& v : vars) entries.push_back(&entry_for(manifest, v, manifest_path));
  std::vector<Tensor> values;
  for (const ManifestEntry* e : entries) values.push_back(read_variable(root, *e));
  const Device device = session.options().device;
  for (std::size_t i = 0; i < vars.size(); ++i) {
    session.variables().set(vars[i].name, device.is_cpu() ? values[i] : values[i].to(device));
  }
  return {.step = manifest.step, .metadata = manifest.metadata};
}

}  // namespace dagrad
