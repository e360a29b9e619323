// IDX files (the MNIST family's format), plain or gzip-compressed: parsing with clear errors.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dagrad {

// One IDX array: element type code, dims, and the big-endian element bytes as stored.
struct IdxArray {
  // 0x08 unsigned byte, 0x09 signed byte, 0x0B int16, 0x0C int32, 0x0D float32, 0x0E float64.
  std::uint8_t type = 0x08;
  std::vector<std::int64_t> dims;
  std::string bytes;

  std::int64_t num_elements() const;
  // Element i converted to double.
  double value(std::int64_t i) const;
};

// Reads an IDX file, gunzipping it when it is gzip data. Throws NotFound for a missing file and
// InvalidArgument naming the file for corrupt gzip data, a bad header or a truncated body.
IdxArray read_idx(const std::string& path);
// Parses the uncompressed bytes of an IDX file; `source` names it in error messages.
IdxArray parse_idx(const std::string& bytes, const std::string& source);
// Reads a whole file, gunzipping gzip data (zlib); the same errors as read_idx.
std::string read_maybe_gzipped(const std::string& path);

}  // namespace dagrad
