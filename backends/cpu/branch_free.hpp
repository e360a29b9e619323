// Selects made of bits for element loops. GCC compiles `c ? a : b` between floats, or `g * (c ? 1 :
// 0)`, into a branch where one side holds a multiply (it may trap) or a store: on random data the
// branch mispredicts every other element and keeps the loop scalar (ReluGrad of 800K float32 took
// 4 ms on Zen 5 that way, 0.11 ms with these; MaxPoolGrad's window maxima alike).
#pragma once

#include <bit>
#include <cstdint>
#include <type_traits>

namespace dagrad::cpu {

// The unsigned integer as wide as A (half, bfloat16, float, double or std::int64_t).
template <class A>
using BitsOf =
    std::conditional_t<sizeof(A) == 2, std::uint16_t, std::conditional_t<sizeof(A) == 4, std::uint32_t, std::uint64_t>>;

// a where c, else b, bit for bit (NaN payloads and signed zeros kept).
template <class A>
A select_bits(bool c, A a, A b) {
  using Bits = BitsOf<A>;
  const Bits mask = -static_cast<Bits>(c);
  return std::bit_cast<A>(static_cast<Bits>((std::bit_cast<Bits>(a) & mask) | (std::bit_cast<Bits>(b) & ~mask)));
}

// 1 where c, else 0.
template <class A>
A one_if(bool c) {
  return select_bits(c, A(1), A(0));
}

}  // namespace dagrad::cpu
