// Division by a divisor fixed at launch, as a multiply-high and a shift: the conv kernels decode
// pixel indices in their inner loops, where a hardware integer division costs dozens of
// instructions. Round-up method: with l = ceil(log2 d) and p = 31 + l, m = ceil(2^p / d) fits in
// 32 bits and floor(n * m / 2^p) = floor(n / d) for every 0 <= n < 2^31.
#pragma once

#include <cstdint>

#include "dagrad/backends/cuda/hd.hpp"

namespace dagrad::cuda {

struct FastDivmod {
  std::uint32_t divisor = 1, multiplier = 0, shift = 0;  // multiplier 0: divisor 1
};

// d in [1, 2^31).
inline FastDivmod make_fast_divmod(std::uint32_t d) {
  FastDivmod f;
  f.divisor = d;
  if (d == 1) return f;
  std::uint32_t l = 0;
  while ((std::uint64_t{1} << l) < d) ++l;
  const std::uint64_t p = 31 + l;
  f.multiplier = static_cast<std::uint32_t>(((std::uint64_t{1} << p) + d - 1) / d);
  f.shift = static_cast<std::uint32_t>(p - 32);
  return f;
}

// n / d and n % d for 0 <= n < 2^31.
DAGRAD_HD void divmod(const FastDivmod& f, std::uint32_t n, std::uint32_t* quotient, std::uint32_t* remainder) {
  std::uint32_t q = n;
  if (f.multiplier != 0) {
#if defined(__CUDA_ARCH__)
    q = __umulhi(n, f.multiplier) >> f.shift;
#else
    q = static_cast<std::uint32_t>((std::uint64_t{n} * f.multiplier) >> 32) >> f.shift;
#endif
  }
  *quotient = q;
  *remainder = n - q * f.divisor;
}

}  // namespace dagrad::cuda
