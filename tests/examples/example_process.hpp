// Test helpers for the example programs: run a built binary with its output captured, start one
// in the background and kill it, and write a small synthetic IDX dataset.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace dagrad::testing {

namespace fs = std::filesystem;

// A fresh directory under DAGRAD_EXAMPLE_TEST_DIR, removed at the end of the test; named after
// the process too, since ctest runs the test cases as parallel processes.
struct ExampleDir {
  fs::path path;
  explicit ExampleDir(const std::string& name)
      : path(fs::path(DAGRAD_EXAMPLE_TEST_DIR) / (name + "-" + std::to_string(getpid()))) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~ExampleDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

inline std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A program started in the background with stdout and stderr going to files.
class Process {
 public:
  Process(const std::string& program, const std::vector<std::string>& args, const fs::path& out, const fs::path& err) {
    std::vector<char*> argv;
    std::vector<std::string> all = {program};
    all.insert(all.end(), args.begin(), args.end());
    for (std::string& a : all) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (posix_spawn(&pid_, program.c_str(), &actions, nullptr, argv.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
  }
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;
  ~Process() {
    if (pid_ > 0 && !waited_) {
      ::kill(pid_, SIGKILL);
      wait();
    }
  }
  bool started() const { return pid_ > 0; }
  bool running() {
    if (waited_) return false;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) waited_ = true, status_ = status;
    return !waited_;
  }
  void kill_hard() { ::kill(pid_, SIGKILL); }
  // The raw wait status.
  int wait() {
    if (!waited_) ::waitpid(pid_, &status_, 0), waited_ = true;
    return status_;
  }

 private:
  pid_t pid_ = -1;
  bool waited_ = false;
  int status_ = 0;
};

struct Result {
  int status = -1;  // the exit status; -1 if killed by a signal
  std::string out, err;
};

// Runs `program args...` to the end; stdout goes to `stdout_path` (a file in `dir` by default).
inline Result run_program(const std::string& program, const std::vector<std::string>& args, const fs::path& dir,
                          const fs::path& stdout_path = {}) {
  const fs::path out = stdout_path.empty() ? dir / "stdout.txt" : stdout_path, err = dir / "stderr.txt";
  Process p(program, args, out, err);
  if (!p.started()) return {};
  const int raw = p.wait();
  Result r;
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  r.out = stdout_path.empty() ? read_text(out) : "";
  r.err = read_text(err);
  return r;
}

// `count` synthetic size x size images (IDX type 0x08) whose label is the brightest quarter of the
// image, in dir/{split}-images-idx3-ubyte and dir/{split}-labels-idx1-ubyte.
inline void write_idx_split(const fs::path& dir, const std::string& split, std::uint32_t count, std::uint32_t seed,
                            std::uint32_t size = 28) {
  auto header = [](std::uint8_t rank, const std::vector<std::uint32_t>& dims) {
    std::string h = {0, 0, 0x08, static_cast<char>(rank)};
    for (std::uint32_t d : dims) {
      for (int shift = 24; shift >= 0; shift -= 8) h.push_back(static_cast<char>((d >> shift) & 0xff));
    }
    return h;
  };
  std::string images = header(3, {count, size, size}), labels = header(1, {count});
  std::uint32_t state = seed * 2654435761u + 1;
  for (std::uint32_t i = 0; i < count; ++i) {
    const int bright = static_cast<int>(i % 4);
    for (std::uint32_t y = 0; y < size; ++y) {
      for (std::uint32_t x = 0; x < size; ++x) {
        state = state * 1664525u + 1013904223u;
        const int quarter = (2 * y >= size) * 2 + (2 * x >= size);
        images.push_back(static_cast<char>((state >> 24) / 2 + (quarter == bright ? 120 : 0)));
      }
    }
    labels.push_back(static_cast<char>(bright));
  }
  std::ofstream(dir / (split + "-images-idx3-ubyte"), std::ios::binary) << images;
  std::ofstream(dir / (split + "-labels-idx1-ubyte"), std::ios::binary) << labels;
}

}  // namespace dagrad::testing
