// IDX parsing and gzip reading through zlib.
#include "dagrad/core/idx.hpp"

#include <cstring>
#include <filesystem>

#include <zlib.h>

#include "dagrad/core/error.hpp"

namespace dagrad {
namespace {

int element_size(std::uint8_t type) {
  switch (type) {
    case 0x08: case 0x09: return 1;
    case 0x0B: return 2;
    case 0x0C: case 0x0D: return 4;
    case 0x0E: return 8;
    default: return 0;
  }
}

std::uint64_t big_endian(const unsigned char* p, int size) {
  std::uint64_t v = 0;
  for (int i = 0; i < size; ++i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

std::int64_t IdxArray::num_elements() const {
  std::int64_t n = 1;
  for (auto d : dims) n *= d;
  return n;
}

double IdxArray::value(std::int64_t i) const {
  const int size = element_size(type);
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data()) + i * size;
  const std::uint64_t raw = big_endian(p, size);
  switch (type) {
    case 0x08: return static_cast<double>(raw);
    case 0x09: return static_cast<double>(static_cast<std::int8_t>(raw));
    case 0x0B: return static_cast<double>(static_cast<std::int16_t>(raw));
    case 0x0C: return static_cast<double>(static_cast<std::int32_t>(raw));
    case 0x0D: {
      const auto bits = static_cast<std::uint32_t>(raw);
      float f;
      std::memcpy(&f, &bits, sizeof f);
      return f;
    }
    default: {
      double d;
      std::memcpy(&d, &raw, sizeof d);
      return d;
    }
  }
}

std::string read_maybe_gzipped(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) fail(Code::NotFound, "IDX file '", path, "' does not exist");
  // gzread passes files that are not gzip data through unchanged.
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr) fail(Code::NotFound, "cannot open IDX file '", path, "'");
  std::string data;
  char chunk[1 << 16];
  int got = 0;
  while ((got = gzread(file, chunk, sizeof chunk)) > 0) data.append(chunk, static_cast<std::size_t>(got));
  int code = Z_OK;
  const char* message = gzerror(file, &code);
  const std::string reason = message ? message : "";
  gzclose(file);
  if (got < 0 || (code != Z_OK && code != Z_STREAM_END)) {
    invalid_argument("corrupt gzip data in '", path, "': ", reason.empty() ? "read error" : reason);
  }
  return data;
}

IdxArray parse_idx(const std::string& bytes, const std::string& source) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  if (bytes.size() < 4 || p[0] != 0 || p[1] != 0) {
    invalid_argument("'", source, "' is not an IDX file: it does not start with the magic bytes 00 00");
  }
  IdxArray array;
  array.type = p[2];
  const int size = element_size(array.type);
  if (size == 0) invalid_argument("'", source, "' has an unknown IDX element type 0x", std::hex, int(array.type));
  const int rank = p[3];
  const std::size_t header = 4 + 4 * static_cast<std::size_t>(rank);
  if (bytes.size() < header) invalid_argument("'", source, "' is truncated inside its IDX header");
  std::int64_t count = 1;
  for (int i = 0; i < rank; ++i) {
    const auto d = static_cast<std::int64_t>(big_endian(p + 4 + 4 * i, 4));
    if (d > (std::int64_t{1} << 40) / std::max<std::int64_t>(count, 1)) {
      invalid_argument("'", source, "' declares implausibly large IDX dimensions");
    }
    array.dims.push_back(d);
    count *= d;
  }
  const auto expected = static_cast<std::size_t>(count) * static_cast<std::size_t>(size);
  if (bytes.size() - header != expected) {
    invalid_argument("'", source, "' is ", bytes.size() - header < expected ? "truncated" : "too long",
                     ": its IDX header promises ", expected, " data bytes, the file holds ", bytes.size() - header);
  }
  array.bytes = bytes.substr(header);
  return array;
}

IdxArray read_idx(const std::string& path) { return parse_idx(read_maybe_gzipped(path), path); }

}  // namespace dagrad
