// Files that cannot fail silently or read without bound: every write, the flush and the close are
// checked, a file that replaces another appears whole or not at all, and readers take bytes from a
// ByteSource as far as a header promises and no further.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace dagrad {

// A file opened for writing (truncated); every failure, close included, throws dagrad::Error
// naming the file and the system's reason (e.g. "No space left on device" for /dev/full).
class OutputFile {
 public:
  // `name` is what error messages call the file (default: `path`), e.g. the path a temporary
  // file stands in for.
  explicit OutputFile(std::string path, std::string name = {});
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  ~OutputFile();  // closes without checking if close() was not reached (an error path)

  void write(const void* data, std::size_t size);
  void write(std::string_view bytes) { write(bytes.data(), bytes.size()); }
  // Flushes to the kernel, fsyncs regular files, closes; throws if any of it failed.
  void close();
  const std::string& path() const { return path_; }

 private:
  std::string path_, name_;
  std::FILE* file_ = nullptr;
};

// Writes `path` through `fill`: a regular file (or a new one) is written to a temporary file in
// the same directory and renamed over `path` once closed, so readers see the old file or the new
// one, never a part; anything else (a device such as /dev/null or /dev/full, a pipe) is written
// in place. A symbolic link is followed: its target is replaced, the link stays. Any failure
// throws and leaves no temporary file behind.
void write_file(const std::string& path, const std::function<void(OutputFile&)>& fill);

// Bytes read in order from a file, compressed data or memory. Format readers take one, so that
// they read exactly what a header promises, and in-memory bytes (tests, fuzzers) go through the
// same code as files.
class ByteSource {
 public:
  explicit ByteSource(std::string name) : name_(std::move(name)) {}
  ByteSource(const ByteSource&) = delete;
  ByteSource& operator=(const ByteSource&) = delete;
  virtual ~ByteSource() = default;

  // What error messages call it: the file's path or the caller's name for the bytes.
  const std::string& name() const { return name_; }
  // Up to `size` bytes into `out`; 0 only at the end of the data. Throws on a read error.
  std::size_t read_some(void* out, std::size_t size);
  // Up to `size` bytes, fewer only where the data ends. Memory grows with the bytes that
  // actually arrive, so a short pipe costs what it holds, not what was asked for.
  std::string read_up_to(std::size_t size);
  // The next `size` bytes without consuming them (fewer where the data ends).
  std::string_view peek(std::size_t size);
  // Whether no byte is left (may read one byte ahead, which stays readable).
  bool at_end() { return peek(1).empty(); }
  // Bytes left where that is known without reading them (memory, a regular file); none for a
  // pipe, a device or compressed data.
  std::optional<std::uint64_t> remaining() const;

 protected:
  virtual std::size_t read_raw(void* out, std::size_t size) = 0;
  virtual std::optional<std::uint64_t> raw_remaining() const { return std::nullopt; }

 private:
  std::string name_;
  std::string peeked_;  // read ahead by peek(), handed out first
};

// Bytes in memory (not copied: they must outlive the source).
class MemorySource final : public ByteSource {
 public:
  MemorySource(std::string_view bytes, std::string name) : ByteSource(std::move(name)), bytes_(bytes) {}

 protected:
  std::size_t read_raw(void* out, std::size_t size) override;
  std::optional<std::uint64_t> raw_remaining() const override { return bytes_.size() - offset_; }

 private:
  std::string_view bytes_;
  std::size_t offset_ = 0;
};

// A file opened for reading. Opening never blocks (a FIFO without a writer reads as empty), a
// directory is refused by name, and a regular file's size is known up front so that a reader can
// refuse a short or long file before it allocates anything.
class InputFile final : public ByteSource {
 public:
  // Throws NotFound (missing, unreadable) or InvalidArgument (a directory) naming `path`.
  explicit InputFile(const std::string& path);
  ~InputFile() override;

 protected:
  std::size_t read_raw(void* out, std::size_t size) override;
  std::optional<std::uint64_t> raw_remaining() const override;

 private:
  int fd_ = -1;
  std::optional<std::uint64_t> remaining_;  // regular files only
};

// Reads at most `limit` bytes of `path`; throws NotFound when it cannot be opened and
// InvalidArgument naming `what` when the file holds more than `limit` bytes.
std::string read_file_limited(const std::string& path, std::size_t limit, std::string_view what);

}  // namespace dagrad
