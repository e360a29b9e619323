// Writing a directory whole: staged beside its target, synced, and swapped into place.
#include "dagrad/core/staged_directory.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "dagrad/core/error.hpp"

namespace dagrad {
namespace {

namespace fs = std::filesystem;

// `dir` without a trailing separator, so that its parent and file name are the real ones.
fs::path target_path(const std::string& dir, std::string_view what) {
  if (dir.empty()) invalid_argument(what, ": the directory name is empty");
  fs::path p = fs::path(dir).lexically_normal();
  if (!p.has_filename()) p = p.parent_path();
  if (p.empty() || p.filename() == "." || p.filename() == ".." || p == p.root_path()) {
    invalid_argument(what, ": '", dir, "' cannot be a ", what, " directory");
  }
  return p;
}

// Where a save falls back to parking the old directory on file systems without an atomic swap.
fs::path previous_path(const fs::path& target) { return fs::path(target.string() + ".previous"); }

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

// A directory that is not one of ours is never replaced: `--save ~` must not empty a home.
void check_replaceable(const fs::path& target, std::string_view what, std::string_view marker_file) {
  std::error_code ec;
  const fs::file_status status = fs::symlink_status(target, ec);
  if (!fs::exists(status)) return;
  if (!fs::is_directory(status)) {
    invalid_argument(what, ": '", target.string(), "' exists and is not a directory (symbolic links are not followed)");
  }
  if (!fs::is_empty(target, ec) && !fs::exists(target / marker_file, ec)) {
    invalid_argument(what, ": '", target.string(), "' exists and is not a ", what, " (it has no ", marker_file,
                     "); refusing to replace it");
  }
}

// Puts the complete directory `staged` at `target`; whatever was at `target` ends up in `staged`.
void swap_into_place(const fs::path& staged, const fs::path& target, std::string_view what) {
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(target, ec))) {
    if (::rename(staged.c_str(), target.c_str()) == 0) return;
    fail(Code::ResourceExhausted, what, ": cannot move '", staged.string(), "' to '", target.string(),
         "': ", std::strerror(errno));
  }
  if (::renameat2(AT_FDCWD, staged.c_str(), AT_FDCWD, target.c_str(), RENAME_EXCHANGE) == 0) return;
  if (errno != EINVAL && errno != ENOSYS) {
    fail(Code::ResourceExhausted, what, ": cannot swap '", staged.string(), "' with '", target.string(),
         "': ", std::strerror(errno));
  }
  // No atomic exchange on this file system: park the old directory where a reader looks when
  // `target` is missing, move the new one in, and hand the old one back for removal.
  const fs::path previous = previous_path(target);
  fs::remove_all(previous, ec);
  if (::rename(target.c_str(), previous.c_str()) != 0) {
    fail(Code::ResourceExhausted, what, ": cannot move '", target.string(), "' aside: ", std::strerror(errno));
  }
  if (::rename(staged.c_str(), target.c_str()) != 0) {
    const int error = errno;
    ::rename(previous.c_str(), target.c_str());
    fail(Code::ResourceExhausted, what, ": cannot move '", staged.string(), "' to '", target.string(),
         "': ", std::strerror(error));
  }
  fs::rename(previous, staged, ec);
}

}  // namespace

void sync_directory(const fs::path& dir, std::string_view what) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) fail(Code::NotFound, what, ": cannot open directory '", dir.string(), "': ", std::strerror(errno));
  const int rc = ::fsync(fd), error = errno;
  ::close(fd);
  if (rc != 0 && error != EINVAL) {  // EINVAL: the file system cannot sync directories
    fail(Code::ResourceExhausted, what, ": cannot sync directory '", dir.string(), "': ", std::strerror(error));
  }
}

void write_directory_whole(const std::string& dir, std::string_view what, std::string_view marker_file,
                           const std::function<void(const fs::path& staged)>& fill) {
  const fs::path target = target_path(dir, what);
  fs::path parent = target.parent_path();
  if (parent.empty()) parent = ".";
  std::error_code ec;
  fs::create_directories(parent, ec);
  if (ec) fail(Code::NotFound, what, ": cannot create directory '", parent.string(), "': ", ec.message());
  check_replaceable(target, what, marker_file);
  remove_abandoned_temporaries(parent / target.filename());
  static std::atomic<unsigned> counter{0};
  const fs::path staged = parent / str_cat(target.filename().string(), ".tmp-", ::getpid(), "-", counter.fetch_add(1));
  if (!fs::create_directory(staged, ec) || ec) {
    fail(Code::NotFound, what, ": cannot create directory '", staged.string(), "': ", ec ? ec.message() : "it exists");
  }
  try {
    fill(staged);
    sync_directory(staged, what);
    swap_into_place(staged, parent / target.filename(), what);
    sync_directory(parent, what);
  } catch (...) {
    fs::remove_all(staged, ec);
    throw;
  }
  fs::remove_all(staged, ec);  // the previous contents, swapped out
}

fs::path directory_to_read(const std::string& dir, std::string_view what, std::string_view marker_file) {
  const fs::path target = target_path(dir, what);
  std::error_code ec;
  if (fs::is_directory(target, ec)) return target;
  if (fs::exists(previous_path(target) / marker_file, ec)) return previous_path(target);
  fail(Code::NotFound, what, " directory '", dir, "' does not exist");
}

}  // namespace dagrad
