// Files that cannot fail silently: every write, the flush and the close are checked, and a file
// that replaces another appears whole or not at all.
#pragma once

#include <cstddef>
#include <cstdio>
#include <functional>
#include <string>
#include <string_view>

namespace dagrad {

// A file opened for writing (truncated); every failure, close included, throws dagrad::Error
// naming the file and the system's reason (e.g. "No space left on device" for /dev/full).
class OutputFile {
 public:
  explicit OutputFile(std::string path);
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  ~OutputFile();  // closes without checking if close() was not reached (an error path)

  void write(const void* data, std::size_t size);
  void write(std::string_view bytes) { write(bytes.data(), bytes.size()); }
  // Flushes to the kernel, fsyncs regular files, closes; throws if any of it failed.
  void close();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
};

// Writes `path` through `fill`: a regular file (or a new one) is written to a temporary file in
// the same directory and renamed over `path` once closed, so readers see the old file or the new
// one, never a part; anything else (a device such as /dev/null or /dev/full, a pipe) is written
// in place. Any failure throws and leaves no temporary file behind.
void write_file(const std::string& path, const std::function<void(OutputFile&)>& fill);

// Reads at most `limit` bytes of `path`; throws NotFound when it cannot be opened and
// InvalidArgument naming `what` when the file holds more than `limit` bytes.
std::string read_file_limited(const std::string& path, std::size_t limit, std::string_view what);

}  // namespace dagrad
