// float32 workspace from the caching host allocator, for kernels that run half/bfloat16 through
// their float32 code: fresh pages cost about 12 us each on these machines, as much as converting them.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>

#include "dagrad/backends/cpu/convert.hpp"
#include "dagrad/core/allocator.hpp"

namespace dagrad::cpu {

class FloatBuffer {
 public:
  explicit FloatBuffer(std::int64_t count)
      : count_(count),
        buffer_(std::make_unique<Buffer>(host_allocator(),
                                         static_cast<std::size_t>(std::max<std::int64_t>(count, 1)) * sizeof(float))) {}
  float* data() const { return static_cast<float*>(buffer_->data()); }
  std::int64_t size() const { return count_; }

 private:
  std::int64_t count_;
  std::unique_ptr<Buffer> buffer_;  // Buffer itself does not move
};

// Conversions (convert.hpp) are bitwise static_cast.
template <class T>
FloatBuffer to_float(const T* data, std::int64_t count) {
  FloatBuffer out(count);
  convert_to_float(data, out.data(), count);
  return out;
}

template <class T>
void from_float(const FloatBuffer& in, T* out) {
  convert_from_float(in.data(), out, in.size());
}

}  // namespace dagrad::cpu
