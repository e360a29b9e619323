// IDX files (the MNIST family's format), plain or gzip-compressed: the header is read and checked
// first, then exactly the data it promises, inflating no further than that.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace dagrad {

class ByteSource;

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

// An IDX file or buffer whose header has been read and checked; read() then takes the data. A
// caller can so compare two headers (images and labels) before reading either body.
class IdxReader {
 public:
  // Opens `path`, gzip or plain. Throws NotFound for a missing file and InvalidArgument naming it
  // for corrupt gzip data or a bad header.
  static IdxReader open(const std::string& path);
  // The same on bytes in memory (gzip or plain; not copied: they must outlive the reader).
  static IdxReader from_bytes(std::string_view bytes, std::string source);

  IdxReader(IdxReader&&) noexcept;
  IdxReader& operator=(IdxReader&&) noexcept;
  ~IdxReader();

  std::uint8_t type() const { return header_.type; }
  const std::vector<std::int64_t>& dims() const { return header_.dims; }
  const std::string& source() const;
  // The data: exactly the bytes the header promises; a short file or bytes after them are
  // refused by name. Call once.
  IdxArray read();

 private:
  explicit IdxReader(std::unique_ptr<ByteSource> raw);
  std::unique_ptr<ByteSource> raw_;   // the file or the memory
  std::unique_ptr<ByteSource> body_;  // raw_ itself, or its gunzipped stream
  IdxArray header_;                   // type and dims; bytes empty until read()
  std::size_t data_bytes_ = 0;
};

// Reads an IDX file, gunzipping it when it is gzip data: IdxReader::open(path).read().
IdxArray read_idx(const std::string& path);
// The same on bytes in memory, gzip or plain; `source` names them in error messages.
IdxArray parse_idx(const std::string& bytes, const std::string& source);

}  // namespace dagrad
