// The CUDA DeviceRuntime: device discovery that never throws, a stream-ordered caching allocator
// per device (cudaMallocAsync pools), host <-> device copies and per-session streams.
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "dagrad/backends/cuda/cuda_check.hpp"
#include "dagrad/backends/cuda/register.hpp"
#include "dagrad/core/allocator.hpp"

namespace dagrad::cuda {
namespace {

// Every allocation and free is ordered on the legacy default stream. Session streams are created
// blocking, so the legacy stream waits for their earlier work and they wait for it: a block freed
// after a kernel's last use cannot be handed out before that kernel has finished.
const cudaStream_t kAllocStream = cudaStreamLegacy;

class CudaAllocator final : public Allocator {
 public:
  explicit CudaAllocator(int index) : index_(index) {
    DeviceGuard guard(index_);
    check_cuda(cudaDeviceGetDefaultMemPool(&pool_, index_), "cudaDeviceGetDefaultMemPool");
    // Keep freed memory in the pool (a cache) instead of returning it at each synchronisation.
    std::uint64_t keep = UINT64_MAX;
    check_cuda(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &keep), "cudaMemPoolSetAttribute");
  }

  Device device() const override { return Device::cuda(index_); }

  void* allocate(std::size_t bytes) override {
    DeviceGuard guard(index_);
    const std::size_t size = round_up(bytes);
    std::uint64_t reserved_before = reserved();
    void* ptr = nullptr;
    const cudaError_t status = cudaMallocAsync(&ptr, size, kAllocStream);
    if (status == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      fail(Code::ResourceExhausted, "out of memory on ", device().to_string(), " allocating ", bytes, " bytes");
    }
    check_cuda(status, "cudaMallocAsync");
    std::lock_guard lock(mutex_);
    if (reserved() > reserved_before)
      ++stats_.fresh_allocations;
    else
      ++stats_.reused_allocations;
    stats_.bytes_in_use += static_cast<std::int64_t>(size);
    if (stats_.bytes_in_use > stats_.peak_bytes_in_use) stats_.peak_bytes_in_use = stats_.bytes_in_use;
    return ptr;
  }

  void deallocate(void* ptr, std::size_t bytes) override {
    // Called from destructors: report nothing, lose nothing but the block if the context is gone.
    int previous = 0;
    cudaGetDevice(&previous);
    cudaSetDevice(index_);
    cudaFreeAsync(ptr, kAllocStream);
    cudaSetDevice(previous);
    std::lock_guard lock(mutex_);
    stats_.bytes_in_use -= static_cast<std::int64_t>(round_up(bytes));
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
    DeviceGuard guard(index_);
    check_cuda(cudaStreamSynchronize(kAllocStream), "cudaStreamSynchronize");
    check_cuda(cudaMemPoolTrimTo(pool_, 0), "cudaMemPoolTrimTo");
  }

 private:
  static std::size_t round_up(std::size_t bytes) { return bytes == 0 ? 256 : (bytes + 255) / 256 * 256; }
  std::uint64_t reserved() const {
    std::uint64_t value = 0;
    cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrReservedMemCurrent, &value);
    return value;
  }

  int index_;
  cudaMemPool_t pool_ = nullptr;
  mutable std::mutex mutex_;
  AllocatorStats stats_;
};

class CudaRuntime final : public DeviceRuntime {
 public:
  int device_count() const override {
    // No driver, no device, a driver too old: all mean "no CUDA device", never an error.
    std::call_once(count_once_, [this] {
      int count = 0;
      if (cudaGetDeviceCount(&count) != cudaSuccess) count = 0;
      cudaGetLastError();  // clear the sticky-free error so later calls start clean
      count_ = count;
    });
    return count_;
  }

  Allocator& allocator(int index) override {
    std::lock_guard lock(mutex_);
    if (allocators_.empty()) allocators_.resize(static_cast<std::size_t>(device_count()));
    auto& slot = allocators_.at(static_cast<std::size_t>(index));
    // Never destroyed: tensors in static objects may outlive any destruction order.
    if (!slot) slot = new CudaAllocator(index);
    return *slot;
  }

  void copy(void* dst, Device dst_device, const void* src, Device src_device, std::size_t bytes) override {
    if (bytes == 0) return;
    DeviceGuard guard(dst_device.is_cpu() ? src_device.index : dst_device.index);
    // cudaMemcpy runs on the legacy stream: after all queued work of blocking streams (so a fetch
    // sees the session's results) and, for host memory, complete when it returns.
    check_cuda(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault), "cudaMemcpy");
  }

  void synchronize(int index) override {
    DeviceGuard guard(index);
    check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  }

  void* create_stream(int index) override {
    DeviceGuard guard(index);
    cudaStream_t stream = nullptr;
    check_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamDefault), "cudaStreamCreate");
    return stream;
  }

  void destroy_stream(int index, void* stream) override {
    int previous = 0;
    cudaGetDevice(&previous);
    cudaSetDevice(index);
    cudaStreamDestroy(as_stream(stream));
    cudaSetDevice(previous);
  }

 private:
  mutable std::once_flag count_once_;
  mutable int count_ = 0;
  std::mutex mutex_;
  std::vector<CudaAllocator*> allocators_;
};

}  // namespace

void register_cuda_runtime() {
  static CudaRuntime* runtime = new CudaRuntime();
  register_device_runtime(Device::Kind::CUDA, runtime);
}

}  // namespace dagrad::cuda
