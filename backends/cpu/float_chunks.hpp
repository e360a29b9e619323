// Element loops on any float dtype through one code path: half/bfloat16 chunks are widened to
// float32 (convert.hpp), computed in float32 and narrowed once; float and double are used in place.
#pragma once

#include <cstdint>

#include "dagrad/backends/cpu/convert.hpp"
#include "dagrad/core/dtype.hpp"

namespace dagrad::cpu {

// Elements per chunk: the widened inputs and the staged output of a chunk stay in L1.
inline constexpr std::int64_t kChunk = 1024;

// Stack room for one widened chunk of T (none needed for float and double).
template <class T>
struct ChunkBuffer {
  alignas(64) accumulator_t<T> data[is_reduced_float_v<T> ? kChunk : 1];
};

// n elements of src in the accumulator type: src itself, or buf holding them widened.
template <class T>
const accumulator_t<T>* load(const T* src, std::int64_t n, accumulator_t<T>* buf) {
  if constexpr (is_reduced_float_v<T>) {
    convert_to_float(src, buf, n);
    return buf;
  } else {
    return src;
  }
}

// Where to compute results bound for dst: dst itself, or buf, which store() then narrows into dst.
template <class T>
accumulator_t<T>* stage(T* dst, accumulator_t<T>* buf) {
  if constexpr (is_reduced_float_v<T>)
    return buf;
  else
    return dst;
}

template <class T>
void store(const accumulator_t<T>* staged, T* dst, std::int64_t n) {
  if constexpr (is_reduced_float_v<T>) convert_from_float(staged, dst, n);
}

}  // namespace dagrad::cpu
