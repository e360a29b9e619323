// The manifest of a checkpoint directory (manifest.json): what was saved, where, and the
// checksums a restore verifies. Parsing refuses anything malformed, naming the field.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "dagrad/core/dtype.hpp"
#include "dagrad/core/shape.hpp"

namespace dagrad {

inline constexpr int kCheckpointFormatVersion = 1;
inline constexpr const char* kCheckpointFormatName = "dagrad checkpoint";
inline constexpr const char* kCheckpointManifestFile = "manifest.json";

struct ManifestEntry {
  std::string name;  // the variable
  DType dtype;       // the variable's dtype (bfloat16 is stored widened to float32 in the file)
  Shape shape;       // fully defined
  std::string file;  // relative to the checkpoint directory: NAME.npy
  std::int64_t bytes = 0;
  std::uint32_t crc32 = 0;
};

struct Manifest {
  std::int64_t step = 0;
  std::map<std::string, std::string> metadata;
  std::vector<ManifestEntry> variables;
};

// The file that holds variable `name`, relative to the checkpoint directory ("conv1/kernel" ->
// "conv1/kernel.npy"); InvalidArgument for a name that would leave the directory or is empty.
std::string checkpoint_file_for(const std::string& name);

std::string manifest_to_json(const Manifest& manifest);
// `source` names the file in errors. Checks the format name and version, every field's type
// and range, unique names, and that each file is checkpoint_file_for(name).
Manifest parse_manifest(const std::string& text, const std::string& source);

}  // namespace dagrad
