// Device names (cpu, cuda:N) and the per-device runtime hook that backends plug into.
#pragma once

#include <cstddef>
#include <ostream>
#include <string>
#include <string_view>

namespace dagrad {

class Allocator;

struct Device {
  enum class Kind { CPU, CUDA };
  Kind kind = Kind::CPU;
  int index = 0;

  static Device cpu() { return {Kind::CPU, 0}; }
  static Device cuda(int index = 0) { return {Kind::CUDA, index}; }
  // "cpu", "cuda", "cuda:1"; throws InvalidArgument on anything else.
  static Device parse(std::string_view text);

  bool is_cpu() const { return kind == Kind::CPU; }
  std::string to_string() const;
  friend bool operator==(const Device&, const Device&) = default;
};

std::ostream& operator<<(std::ostream& out, const Device& device);
std::string_view device_kind_name(Device::Kind kind);

// What a backend provides for its device kind: memory, copies to and from the host, and a way
// to wait for queued work. The CPU runtime is built in; the CUDA backend registers its own.
class DeviceRuntime {
 public:
  virtual ~DeviceRuntime() = default;
  virtual int device_count() const = 0;
  virtual Allocator& allocator(int index) = 0;
  // Copies `bytes` between any two devices of which at least one is of this runtime's kind.
  virtual void copy(void* dst, Device dst_device, const void* src, Device src_device, std::size_t bytes) = 0;
  virtual void synchronize(int index) = 0;
  // An execution queue of its own on device `index` (a cudaStream_t for CUDA) that a Session
  // keeps for its lifetime and hands to kernels; null where the device has no queues.
  virtual void* create_stream(int /*index*/) { return nullptr; }
  virtual void destroy_stream(int /*index*/, void* /*stream*/) {}
};

// Returns the runtime it replaces (null if none), so a test can plug in a fake and put it back.
// The swap is atomic (safe while other threads look runtimes up), but a runtime that sessions
// still use must outlive them: unplug one only while no thread uses its device.
DeviceRuntime* register_device_runtime(Device::Kind kind, DeviceRuntime* runtime);
// The runtime for `device`; throws NotFound ("no CUDA device available") when there is none.
DeviceRuntime& device_runtime(Device device);
bool device_available(Device device);

}  // namespace dagrad
