// Per-task workspace that its task writes before it reads: `count` values of T on the heap, not
// initialised (a std::vector's zero fill took 4% of a first layer's NCHW filter gradient). Heap,
// not the caching host allocator: tasks hold these concurrently, as many as the threads happen to
// run at once, and a training step must take no fresh memory from that allocator after the first.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace dagrad::cpu {

template <class T>
class ScratchArray {
 public:
  // Bytes suitably aligned for T (new[] aligns to max_align_t); T is a float or 16-bit bit pattern.
  explicit ScratchArray(std::int64_t count)
      : bytes_(new std::byte[static_cast<std::size_t>(std::max<std::int64_t>(count, 1)) * sizeof(T)]) {}
  T* data() const { return reinterpret_cast<T*>(bytes_.get()); }

 private:
  std::unique_ptr<std::byte[]> bytes_;
};

}  // namespace dagrad::cpu
