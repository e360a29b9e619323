// A fresh directory under the system's temporary folder, removed with everything in it at scope end.
#pragma once

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>

namespace dagrad::testing {

struct TempDir {
  std::filesystem::path path;
  explicit TempDir(std::string_view prefix = "dagrad_test") {
    static std::atomic<int> counter{0};
    path = std::filesystem::temp_directory_path() /
           (std::string(prefix) + "_" + std::to_string(getpid()) + "_" + std::to_string(counter++));
    std::filesystem::create_directories(path);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

}  // namespace dagrad::testing
