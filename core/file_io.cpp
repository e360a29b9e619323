// Checked file output (OutputFile, write_file) and bounded file input (read_file_limited).
#include "dagrad/core/file_io.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <random>

#include "dagrad/core/error.hpp"

namespace dagrad {
namespace {

[[noreturn]] void io_failure(Code code, std::string_view action, const std::string& path, int error) {
  fail(code, "cannot ", action, " '", path, "': ", std::strerror(error));
}

// A name beside `path` that no other writer picks: path.tmp-<random>.
std::string temporary_name(const std::string& path) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  return path + ".tmp-" + std::to_string(rng());
}

}  // namespace

OutputFile::OutputFile(std::string path) : path_(std::move(path)) {
  file_ = std::fopen(path_.c_str(), "wb");
  if (!file_) io_failure(Code::NotFound, "open for writing", path_, errno);
}

OutputFile::~OutputFile() {
  if (file_) std::fclose(file_);
}

void OutputFile::write(const void* data, std::size_t size) {
  if (!file_) fail(Code::FailedPrecondition, "cannot write to '", path_, "': already closed");
  if (size > 0 && std::fwrite(data, 1, size, file_) != size) {
    io_failure(Code::ResourceExhausted, "write to", path_, errno);
  }
}

void OutputFile::close() {
  if (!file_) return;
  std::FILE* f = file_;
  file_ = nullptr;
  int error = 0;
  if (std::fflush(f) != 0) error = errno;
  // fsync only where it means something: a device or pipe reports EINVAL/EROFS, not a failure.
  if (error == 0 && ::fsync(fileno(f)) != 0 && errno != EINVAL && errno != EROFS) error = errno;
  if (std::fclose(f) != 0 && error == 0) error = errno;
  if (error != 0) io_failure(Code::ResourceExhausted, "write to", path_, error);
}

void write_file(const std::string& path, const std::function<void(OutputFile&)>& fill) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const auto status = fs::status(path, ec);
  if (fs::exists(status) && !fs::is_regular_file(status)) {  // a device or a pipe: write in place
    OutputFile out(path);
    fill(out);
    out.close();
    return;
  }
  const std::string temporary = temporary_name(path);
  try {
    OutputFile out(temporary);
    fill(out);
    out.close();
    fs::rename(temporary, path, ec);
    if (ec) io_failure(Code::NotFound, "rename a temporary file to", path, ec.value());
  } catch (...) {
    fs::remove(temporary, ec);
    throw;
  }
}

std::string read_file_limited(const std::string& path, std::size_t limit, std::string_view what) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) io_failure(Code::NotFound, "open", path, errno);
  std::string bytes;
  char chunk[1 << 16];
  std::size_t got = 0;
  while ((got = std::fread(chunk, 1, sizeof chunk, f)) > 0) {
    if (bytes.size() + got > limit) {
      std::fclose(f);
      invalid_argument(what, " '", path, "' is larger than ", limit, " bytes");
    }
    bytes.append(chunk, got);
  }
  const bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed) fail(Code::NotFound, "cannot read '", path, "'");
  return bytes;
}

}  // namespace dagrad
