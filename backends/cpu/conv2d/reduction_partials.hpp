// Partial results of a reduction split into fixed chunks, and their sum in chunk order: the
// filter gradients' determinism (the same bits for any thread count) in one place.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include <tbb/parallel_for.h>

#include "dagrad/core/allocator.hpp"

namespace dagrad::cpu {

template <class A>
class ReductionPartials {
 public:
  // `chunks` partial results of `size` elements each, from the caching host allocator (fresh
  // pages cost about 12 us each here). With `direct`, chunk 0 is `direct` itself.
  ReductionPartials(std::int64_t chunks, std::int64_t size, A* direct = nullptr)
      : chunks_(chunks),
        size_(size),
        direct_(direct),
        buffer_(host_allocator(),
                static_cast<std::size_t>(std::max<std::int64_t>((chunks - (direct ? 1 : 0)) * size, 1)) * sizeof(A)) {}

  A* chunk(std::int64_t c) const {
    if (direct_) return c == 0 ? direct_ : base() + (c - 1) * size_;
    return base() + c * size_;
  }

  // out[e] = ((chunk0[e] + chunk1[e]) + chunk2[e]) + ..., rounded once to T; vectorised over e.
  // `out` may be `direct`.
  template <class T>
  void sum_to(T* out) const {
    if (chunks_ == 1 && static_cast<const void*>(out) == direct_) return;
    constexpr std::int64_t kBlock = 1024;
    tbb::parallel_for(std::int64_t{0}, (size_ + kBlock - 1) / kBlock, [&](std::int64_t b) {
      const std::int64_t e0 = b * kBlock, n = std::min(kBlock, size_ - e0);
      A acc[kBlock];
      std::copy_n(chunk(0) + e0, n, acc);
      for (std::int64_t c = 1; c < chunks_; ++c) {
        const A* part = chunk(c) + e0;
        for (std::int64_t e = 0; e < n; ++e) acc[e] += part[e];
      }
      for (std::int64_t e = 0; e < n; ++e) out[e0 + e] = static_cast<T>(acc[e]);
    });
  }

 private:
  A* base() const { return static_cast<A*>(buffer_.data()); }

  std::int64_t chunks_, size_;
  A* direct_;
  Buffer buffer_;
};

}  // namespace dagrad::cpu
