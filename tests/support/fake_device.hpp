// A fake CUDA device for tests without a GPU: host memory that says it lives on cuda:0, plugged in
// as the CUDA runtime for a scope. Kernels registered for Device::Kind::CUDA then run on it, and
// code that stages device tensors through the host (Tensor::to, DeviceRuntime::copy) is exercised.
#pragma once

#include <chrono>
#include <cstring>
#include <mutex>
#include <new>
#include <thread>

#include <dagrad/core/allocator.hpp>
#include <dagrad/core/device.hpp>

namespace dagrad::testing {

// Counts what it holds, so a test can see buffers go. Locked like a real allocator: sessions
// may allocate from several threads.
class FakeDeviceAllocator final : public Allocator {
 public:
  Device device() const override { return Device::cuda(); }
  void* allocate(std::size_t bytes) override {
    std::lock_guard lock(mutex_);
    stats_.bytes_in_use += static_cast<std::int64_t>(bytes);
    ++stats_.fresh_allocations;
    return ::operator new (bytes == 0 ? 1 : bytes, std::align_val_t{64});
  }
  void deallocate(void* ptr, std::size_t bytes) override {
    std::lock_guard lock(mutex_);
    stats_.bytes_in_use -= static_cast<std::int64_t>(bytes);
    ::operator delete (ptr, std::align_val_t{64});
  }
  AllocatorStats stats() const override {
    std::lock_guard lock(mutex_);
    return stats_;
  }
  void reset_peak() override {}
  void release_cached() override {}

 private:
  mutable std::mutex mutex_;
  AllocatorStats stats_;
};

class FakeDeviceRuntime final : public DeviceRuntime {
 public:
  // `copy_delay`: how long each copy takes, to make a slow device copy observable.
  explicit FakeDeviceRuntime(std::chrono::microseconds copy_delay = {}) : copy_delay_(copy_delay) {}
  int device_count() const override { return 1; }
  Allocator& allocator(int) override { return allocator_; }
  void copy(void* dst, Device, const void* src, Device, std::size_t bytes) override {
    if (copy_delay_.count() > 0) std::this_thread::sleep_for(copy_delay_);
    std::memcpy(dst, src, bytes);
  }
  void synchronize(int) override {}

 private:
  std::chrono::microseconds copy_delay_;
  FakeDeviceAllocator allocator_;
};

// Plugs `runtime` in as the CUDA runtime and puts the real one (or none) back. The runtime must
// outlive every tensor it allocated: a function-local static does.
class FakeCudaScope {
 public:
  explicit FakeCudaScope(DeviceRuntime& runtime) : previous_(register_device_runtime(Device::Kind::CUDA, &runtime)) {}
  ~FakeCudaScope() { register_device_runtime(Device::Kind::CUDA, previous_); }
  FakeCudaScope(const FakeCudaScope&) = delete;
  FakeCudaScope& operator=(const FakeCudaScope&) = delete;

 private:
  DeviceRuntime* previous_;
};

}  // namespace dagrad::testing
