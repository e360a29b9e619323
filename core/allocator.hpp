// Allocators and reference-counted buffers; the host allocator caches freed blocks for reuse.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "dagrad/core/device.hpp"

namespace dagrad {

struct AllocatorStats {
  std::int64_t bytes_in_use = 0;
  std::int64_t peak_bytes_in_use = 0;
  std::int64_t fresh_allocations = 0;   // blocks taken from the system
  std::int64_t reused_allocations = 0;  // blocks served from the cache
};

class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual Device device() const = 0;
  // Returns memory aligned to at least 64 bytes; never null (throws ResourceExhausted).
  virtual void* allocate(std::size_t bytes) = 0;
  virtual void deallocate(void* ptr, std::size_t bytes) = 0;
  virtual AllocatorStats stats() const = 0;
  virtual void reset_peak() = 0;
  // Returns cached, unused blocks to the system.
  virtual void release_cached() = 0;
};

// The process-wide caching allocator for host memory.
Allocator& host_allocator();
Allocator& allocator_for(Device device);

// A block of device memory, handed back to its allocator when the last Tensor lets go.
class Buffer {
 public:
  Buffer(Allocator& allocator, std::size_t bytes);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }
  Device device() const { return allocator_->device(); }

 private:
  Allocator* allocator_;
  void* data_;
  std::size_t bytes_;
};

}  // namespace dagrad
