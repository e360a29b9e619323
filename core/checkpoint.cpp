// Saving and restoring session variables: a checkpoint directory written whole beside its target
// and swapped into place, and a restore that verifies everything before changing anything.
#include "dagrad/core/checkpoint.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>
#include <zlib.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "dagrad/core/checked.hpp"
#include "dagrad/core/checkpoint_manifest.hpp"
#include "dagrad/core/file_io.hpp"
#include "dagrad/core/npy.hpp"

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

// `dir` without a trailing separator, so that its parent and file name are the real ones.
fs::path target_path(const std::string& dir) {
  if (dir.empty()) invalid_argument("checkpoint: the directory name is empty");
  fs::path p = fs::path(dir).lexically_normal();
  if (!p.has_filename()) p = p.parent_path();
  if (p.empty() || p.filename() == "." || p.filename() == ".." || p == p.root_path()) {
    invalid_argument("checkpoint: '", dir, "' cannot be a checkpoint directory");
  }
  return p;
}

// Where a save falls back to parking the old checkpoint on file systems without an atomic swap.
fs::path previous_path(const fs::path& target) { return fs::path(target.string() + ".previous"); }

// Makes a directory's entries durable (a rename is only durable once its directory is synced).
void sync_directory(const fs::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) fail(Code::NotFound, "checkpoint: cannot open directory '", dir.string(), "': ", std::strerror(errno));
  const int rc = ::fsync(fd), error = errno;
  ::close(fd);
  if (rc != 0 && error != EINVAL) {  // EINVAL: the file system cannot sync directories
    fail(Code::ResourceExhausted, "checkpoint: cannot sync directory '", dir.string(), "': ", std::strerror(error));
  }
}

// Temporary directories of saves into `target` whose process is gone (killed mid-save).
void remove_abandoned_temporaries(const fs::path& target) {
  const std::string prefix = target.filename().string() + ".tmp-";
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(target.parent_path(), ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    const long pid = std::strtol(name.c_str() + prefix.size(), nullptr, 10);
    if (pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) fs::remove_all(entry.path(), ec);
  }
}

// A directory that is not a checkpoint is never replaced: `--save ~` must not empty a home.
void check_replaceable(const fs::path& target) {
  std::error_code ec;
  const fs::file_status status = fs::symlink_status(target, ec);
  if (!fs::exists(status)) return;
  if (!fs::is_directory(status)) {
    invalid_argument("checkpoint: '", target.string(),
                     "' exists and is not a directory (symbolic links are not followed)");
  }
  if (!fs::is_empty(target, ec) && !fs::exists(target / kCheckpointManifestFile, ec)) {
    invalid_argument("checkpoint: '", target.string(), "' exists and is not a checkpoint (it has no ",
                     kCheckpointManifestFile, "); refusing to replace it");
  }
}

// Puts the complete checkpoint `staged` at `target`; whatever was at `target` ends up in `staged`.
void swap_into_place(const fs::path& staged, const fs::path& target) {
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(target, ec))) {
    if (::rename(staged.c_str(), target.c_str()) == 0) return;
    fail(Code::ResourceExhausted, "checkpoint: cannot move '", staged.string(), "' to '", target.string(),
         "': ", std::strerror(errno));
  }
  if (::renameat2(AT_FDCWD, staged.c_str(), AT_FDCWD, target.c_str(), RENAME_EXCHANGE) == 0) return;
  if (errno != EINVAL && errno != ENOSYS) {
    fail(Code::ResourceExhausted, "checkpoint: cannot swap '", staged.string(), "' with '", target.string(),
         "': ", std::strerror(errno));
  }
  // No atomic exchange on this file system: park the old checkpoint where a restore looks when
  // `target` is missing, move the new one in, and hand the old one back for removal.
  const fs::path previous = previous_path(target);
  fs::remove_all(previous, ec);
  if (::rename(target.c_str(), previous.c_str()) != 0) {
    fail(Code::ResourceExhausted, "checkpoint: cannot move '", target.string(), "' aside: ", std::strerror(errno));
  }
  if (::rename(staged.c_str(), target.c_str()) != 0) {
    const int error = errno;
    ::rename(previous.c_str(), target.c_str());
    fail(Code::ResourceExhausted, "checkpoint: cannot move '", staged.string(), "' to '", target.string(),
         "': ", std::strerror(error));
  }
  fs::rename(previous, staged, ec);
}

// Writes every file of the checkpoint into the empty directory `staged`; the manifest last.
void write_checkpoint_files(Session& session, const Graph& graph, const fs::path& staged, const CheckpointInfo& info) {
  Manifest manifest{.step = info.step, .metadata = info.metadata};
  std::vector<fs::path> directories = {staged};
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
  for (const fs::path& d : directories) sync_directory(d);
}

// The checkpoint directory to read: `dir`, or the one a save parked aside if it stopped between
// its two renames (only on file systems without an atomic exchange).
fs::path checkpoint_to_read(const std::string& dir) {
  const fs::path target = target_path(dir);
  std::error_code ec;
  if (fs::is_directory(target, ec)) return target;
  if (fs::exists(previous_path(target) / kCheckpointManifestFile, ec)) return previous_path(target);
  fail(Code::NotFound, "checkpoint directory '", dir, "' does not exist");
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
  const fs::path target = target_path(dir);
  fs::path parent = target.parent_path();
  if (parent.empty()) parent = ".";
  std::error_code ec;
  fs::create_directories(parent, ec);
  if (ec) fail(Code::NotFound, "checkpoint: cannot create directory '", parent.string(), "': ", ec.message());
  check_replaceable(target);
  remove_abandoned_temporaries(parent / target.filename());
  static std::atomic<unsigned> counter{0};
  const fs::path staged = parent / str_cat(target.filename().string(), ".tmp-", ::getpid(), "-", counter.fetch_add(1));
  if (!fs::create_directory(staged, ec) || ec) {
    fail(Code::NotFound, "checkpoint: cannot create directory '", staged.string(),
         "': ", ec ? ec.message() : "it exists");
  }
  try {
    write_checkpoint_files(session, graph, staged, info);
    swap_into_place(staged, parent / target.filename());
    sync_directory(parent);
  } catch (...) {
    fs::remove_all(staged, ec);
    throw;
  }
  fs::remove_all(staged, ec);  // the previous checkpoint, swapped out
}

CheckpointInfo restore_checkpoint(Session& session, const Graph& graph, const std::string& dir) {
  const fs::path root = checkpoint_to_read(dir);
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
