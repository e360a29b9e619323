// Device parsing and the registry of device runtimes, with the built-in CPU runtime.
#include "dagrad/core/device.hpp"

#include <array>
#include <atomic>
#include <charconv>
#include <cstring>

#include "dagrad/core/allocator.hpp"
#include "dagrad/core/error.hpp"

namespace dagrad {
namespace {

class CpuRuntime final : public DeviceRuntime {
 public:
  int device_count() const override { return 1; }
  Allocator& allocator(int) override { return host_allocator(); }
  void copy(void* dst, Device, const void* src, Device, std::size_t bytes) override {
    if (bytes) std::memcpy(dst, src, bytes);
  }
  void synchronize(int) override {}
};

// Atomic entries: a runtime may be plugged in while other threads look one up (the CUDA backend
// registers itself lazily). Keeping a replaced runtime alive is the caller's job.
std::array<std::atomic<DeviceRuntime*>, 2>& runtimes() {
  static CpuRuntime cpu;
  static std::array<std::atomic<DeviceRuntime*>, 2> table{&cpu, nullptr};
  return table;
}

DeviceRuntime* runtime_of(Device::Kind kind) {
  return runtimes()[static_cast<std::size_t>(kind)].load(std::memory_order_acquire);
}

}  // namespace

Device Device::parse(std::string_view text) {
  if (text == "cpu" || text == "cpu:0") return cpu();
  if (text == "cuda" || text == "gpu") return cuda(0);
  for (std::string_view prefix : {"cuda:", "gpu:"}) {
    if (text.substr(0, prefix.size()) == prefix) {
      int index = -1;
      auto digits = text.substr(prefix.size());
      auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
      if (ec == std::errc() && end == digits.data() + digits.size() && index >= 0) return cuda(index);
    }
  }
  invalid_argument("unknown device '", text, "'; expected cpu, cuda or cuda:N");
}

std::string Device::to_string() const { return kind == Kind::CPU ? "cpu" : "cuda:" + std::to_string(index); }

std::ostream& operator<<(std::ostream& out, const Device& device) { return out << device.to_string(); }

std::string_view device_kind_name(Device::Kind kind) { return kind == Device::Kind::CPU ? "cpu" : "cuda"; }

DeviceRuntime* register_device_runtime(Device::Kind kind, DeviceRuntime* runtime) {
  return runtimes()[static_cast<std::size_t>(kind)].exchange(runtime, std::memory_order_acq_rel);
}

bool device_available(Device device) {
  DeviceRuntime* runtime = runtime_of(device.kind);
  return runtime != nullptr && device.index >= 0 && device.index < runtime->device_count();
}

DeviceRuntime& device_runtime(Device device) {
  DeviceRuntime* runtime = runtime_of(device.kind);
  if (device.kind == Device::Kind::CUDA && (runtime == nullptr || runtime->device_count() == 0)) {
    fail(Code::NotFound, "no CUDA device available (asked for ", device.to_string(), ")");
  }
  if (runtime == nullptr || device.index < 0 || device.index >= runtime->device_count()) {
    fail(Code::NotFound, "device ", device.to_string(), " does not exist");
  }
  return *runtime;
}

}  // namespace dagrad
