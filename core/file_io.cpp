// Checked file output (OutputFile, write_file) and bounded input (ByteSource, InputFile).
#include "dagrad/core/file_io.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <random>

#include "dagrad/core/error.hpp"

namespace dagrad {
namespace {

namespace fs = std::filesystem;

// The error code for a failed system call: a missing path is NotFound, a full disk
// ResourceExhausted, anything else (permissions, a directory, an I/O error) a bad argument.
Code code_of(int error) {
  switch (error) {
    case ENOENT:
    case ENOTDIR:
      return Code::NotFound;
    case ENOSPC:
    case EDQUOT:
    case EFBIG:
    case ENOMEM:
      return Code::ResourceExhausted;
    default:
      return Code::InvalidArgument;
  }
}

[[noreturn]] void io_failure(std::string_view action, const std::string& path, int error) {
  fail(code_of(error), "cannot ", action, " '", path, "': ", std::strerror(error));
}

// A name beside `path` that no other writer picks: path.tmp-<random>.
std::string temporary_name(const std::string& path) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  return path + ".tmp-" + std::to_string(rng());
}

// Makes a rename in `dir` durable. Best effort: some file systems cannot fsync a directory, and
// the file itself is already safe on disk.
void sync_directory(const fs::path& dir) {
  const int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

// Writes a new regular file at `target` through a temporary beside it. Errors name `shown`, the
// path the caller gave.
void replace_regular_file(const fs::path& target, const std::string& shown,
                          const std::function<void(OutputFile&)>& fill) {
  std::error_code ec;
  const auto old_status = fs::status(target, ec);
  const std::string temporary = temporary_name(target.string());
  try {
    OutputFile out(temporary, shown);
    fill(out);
    out.close();
    // The new file keeps the permissions of the one it replaces (a private checkpoint stays private).
    if (fs::exists(old_status)) fs::permissions(temporary, old_status.permissions(), ec);
    if (std::rename(temporary.c_str(), target.c_str()) != 0) io_failure("replace", shown, errno);
  } catch (...) {
    fs::remove(temporary, ec);
    throw;
  }
  sync_directory(target.parent_path());
}

}  // namespace

OutputFile::OutputFile(std::string path, std::string name) : path_(std::move(path)), name_(std::move(name)) {
  if (name_.empty()) name_ = path_;
  file_ = std::fopen(path_.c_str(), "wb");
  if (!file_) io_failure("open for writing", name_, errno);
}

OutputFile::~OutputFile() {
  if (file_) std::fclose(file_);
}

void OutputFile::write(const void* data, std::size_t size) {
  if (!file_) fail(Code::FailedPrecondition, "cannot write to '", name_, "': already closed");
  if (size > 0 && std::fwrite(data, 1, size, file_) != size) io_failure("write to", name_, errno);
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
  if (error != 0) io_failure("write to", name_, error);
}

void write_file(const std::string& path, const std::function<void(OutputFile&)>& fill) {
  if (path.empty()) invalid_argument("cannot write a file with an empty name");
  std::error_code ec;
  const auto status = fs::status(path, ec);                  // follows links: a link's target is what is written
  if (fs::exists(status) && !fs::is_regular_file(status)) {  // a device, a pipe or a directory: in place
    OutputFile out(path);
    fill(out);
    out.close();
    return;
  }
  fs::path target = path;
  if (fs::is_symlink(fs::symlink_status(path, ec))) {
    target = fs::weakly_canonical(path, ec);
    if (ec) io_failure("resolve the link", path, ec.value());
  }
  replace_regular_file(target, path, fill);
}

std::size_t ByteSource::read_some(void* out, std::size_t size) {
  if (size == 0) return 0;
  if (peeked_.empty()) return read_raw(out, size);
  const std::size_t n = std::min(size, peeked_.size());
  std::memcpy(out, peeked_.data(), n);
  peeked_.erase(0, n);
  return n;
}

std::string ByteSource::read_up_to(std::size_t size) {
  constexpr std::size_t kChunk = std::size_t{1} << 20;
  std::string bytes;
  if (const auto left = remaining()) bytes.reserve(static_cast<std::size_t>(std::min<std::uint64_t>(size, *left)));
  while (bytes.size() < size) {
    const std::size_t have = bytes.size();
    bytes.resize(have + std::min(kChunk, size - have));
    const std::size_t got = read_some(bytes.data() + have, bytes.size() - have);
    bytes.resize(have + got);
    if (got == 0) break;
  }
  return bytes;
}

std::string_view ByteSource::peek(std::size_t size) {
  while (peeked_.size() < size) {
    const std::size_t have = peeked_.size();
    peeked_.resize(size);
    const std::size_t got = read_raw(peeked_.data() + have, size - have);
    peeked_.resize(have + got);
    if (got == 0) break;
  }
  return std::string_view(peeked_).substr(0, size);
}

std::optional<std::uint64_t> ByteSource::remaining() const {
  const auto raw = raw_remaining();
  if (!raw) return std::nullopt;
  return *raw + peeked_.size();
}

std::size_t MemorySource::read_raw(void* out, std::size_t size) {
  const std::size_t n = std::min(size, bytes_.size() - offset_);
  if (n) std::memcpy(out, bytes_.data() + offset_, n);
  offset_ += n;
  return n;
}

InputFile::InputFile(const std::string& path) : ByteSource(path) {
  // O_NONBLOCK: opening a FIFO that has no writer would otherwise wait for one forever.
  fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd_ < 0) io_failure("open", path, errno);
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    const int error = errno;
    ::close(fd_);
    io_failure("read", path, error);
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd_);
    invalid_argument("cannot read '", path, "': it is a directory");
  }
  // Reads block again from here on: a pipe's writer may still be producing.
  ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) & ~O_NONBLOCK);
  if (S_ISREG(st.st_mode)) remaining_ = static_cast<std::uint64_t>(st.st_size);
}

InputFile::~InputFile() { ::close(fd_); }

std::size_t InputFile::read_raw(void* out, std::size_t size) {
  while (true) {
    const ssize_t got = ::read(fd_, out, size);
    if (got >= 0) {
      if (remaining_) *remaining_ -= std::min<std::uint64_t>(*remaining_, static_cast<std::uint64_t>(got));
      return static_cast<std::size_t>(got);
    }
    if (errno != EINTR) io_failure("read", name(), errno);
  }
}

std::optional<std::uint64_t> InputFile::raw_remaining() const { return remaining_; }

std::string read_file_limited(const std::string& path, std::size_t limit, std::string_view what) {
  InputFile file(path);
  if (const auto size = file.remaining(); size && *size > limit) {
    invalid_argument(what, " '", path, "' is larger than ", limit, " bytes");
  }
  std::string bytes = file.read_up_to(limit);
  if (!file.at_end()) invalid_argument(what, " '", path, "' is larger than ", limit, " bytes");
  return bytes;
}

}  // namespace dagrad
