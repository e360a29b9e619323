// The caching host allocator: freed blocks are kept by size and handed out again, because on
// virtual machines the first touch of a fresh page costs far more than the arithmetic on it.
// Every Buffer is checked against the memory limit (memory_limit.hpp) before it is allocated.
#include "dagrad/core/allocator.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#include "dagrad/core/error.hpp"
#include "dagrad/core/memory_limit.hpp"

namespace dagrad {
namespace {

constexpr std::size_t kAlignment = 64;

// 0: the default (physical memory).
std::atomic<std::int64_t> configured_limit{0};

// Rounds up so that blocks of similar size share a cache bin.
std::size_t bin_size(std::size_t bytes) {
  if (bytes == 0) return kAlignment;
  const std::size_t granule = bytes < 4096 ? kAlignment : 4096;
  return (bytes + granule - 1) / granule * granule;
}

class CachingHostAllocator final : public Allocator {
 public:
  Device device() const override { return Device::cpu(); }

  void* allocate(std::size_t bytes) override {
    const std::size_t size = bin_size(bytes);
    std::lock_guard lock(mutex_);
    void* ptr = nullptr;
    auto bin = free_.find(size);
    if (bin != free_.end() && !bin->second.empty()) {
      ptr = bin->second.back();
      bin->second.pop_back();
      cached_bytes_ -= size;
      ++stats_.reused_allocations;
    } else {
      ptr = std::aligned_alloc(kAlignment, size);
      if (ptr == nullptr) {
        fail(Code::ResourceExhausted, "out of host memory allocating ", bytes, " bytes");
      }
      ++stats_.fresh_allocations;
    }
    stats_.bytes_in_use += static_cast<std::int64_t>(size);
    if (stats_.bytes_in_use > stats_.peak_bytes_in_use) stats_.peak_bytes_in_use = stats_.bytes_in_use;
    return ptr;
  }

  void deallocate(void* ptr, std::size_t bytes) override {
    const std::size_t size = bin_size(bytes);
    std::lock_guard lock(mutex_);
    stats_.bytes_in_use -= static_cast<std::int64_t>(size);
    if (cached_bytes_ + size > kMaxCachedBytes) {
      std::free(ptr);
      return;
    }
    free_[size].push_back(ptr);
    cached_bytes_ += size;
  }

  AllocatorStats stats() const override {
    std::lock_guard lock(mutex_);
    return stats_;
  }

  void reset_peak() override {
    std::lock_guard lock(mutex_);
    stats_.peak_bytes_in_use = stats_.bytes_in_use;
  }

  void release_cached() override {
    std::lock_guard lock(mutex_);
    for (auto& [size, blocks] : free_) {
      for (void* ptr : blocks) std::free(ptr);
    }
    free_.clear();
    cached_bytes_ = 0;
  }

 private:
  static constexpr std::size_t kMaxCachedBytes = std::size_t{4} << 30;
  mutable std::mutex mutex_;
  std::unordered_map<std::size_t, std::vector<void*>> free_;
  std::size_t cached_bytes_ = 0;
  AllocatorStats stats_;
};

}  // namespace

std::int64_t physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGE_SIZE);
  std::int64_t bytes = 0;
  if (pages <= 0 || page_size <= 0 || __builtin_mul_overflow(std::int64_t{pages}, std::int64_t{page_size}, &bytes)) {
    return std::numeric_limits<std::int64_t>::max();  // unknown: only the allocator can say no
  }
  return bytes;
}

std::int64_t memory_limit() {
  const std::int64_t limit = configured_limit.load(std::memory_order_relaxed);
  if (limit > 0) return limit;
  static const std::int64_t physical = physical_memory_bytes();
  return physical;
}

void set_memory_limit(std::int64_t bytes) {
  DAGRAD_REQUIRE(bytes >= 0, "set_memory_limit: the limit must be a non-negative byte count (0: physical memory), got ",
                 bytes);
  configured_limit.store(bytes, std::memory_order_relaxed);
}

Allocator& host_allocator() {
  // Never destroyed: tensors held in static objects may outlive any destruction order.
  static auto* allocator = new CachingHostAllocator();
  return *allocator;
}

Allocator& allocator_for(Device device) { return device_runtime(device).allocator(device.index); }

namespace {

// The memory limit and std::bad_alloc, for every buffer: workspace buffers too, not only tensors.
void* allocate_within_limit(Allocator& allocator, std::size_t bytes) {
  const std::int64_t limit = memory_limit();
  if (bytes > static_cast<std::uint64_t>(limit)) {
    fail(Code::ResourceExhausted, "OOM when allocating a buffer of ", bytes, " bytes on ",
         allocator.device().to_string(), ": it exceeds the memory limit of ", limit,
         " bytes (dagrad::set_memory_limit)");
  }
  try {
    return allocator.allocate(bytes);
  } catch (const std::bad_alloc&) {
    fail(Code::ResourceExhausted, "OOM when allocating a buffer of ", bytes, " bytes on ",
         allocator.device().to_string());
  }
}

}  // namespace

Buffer::Buffer(Allocator& allocator, std::size_t bytes)
    : allocator_(&allocator), data_(allocate_within_limit(allocator, bytes)), bytes_(bytes) {}

Buffer::~Buffer() { allocator_->deallocate(data_, bytes_); }

}  // namespace dagrad
