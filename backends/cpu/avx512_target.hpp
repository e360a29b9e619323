// Element loops compiled twice, for the baseline ISA and, through GCC's target attribute, for
// AVX-512 (16 float lanes, and bfloat16 widening in registers), chosen at run time from cpu_info
// (so DAGRAD_MAX_CPU_ISA caps it). Unlike -m flags on a file (backends/cpu/isa/), the attribute
// leaves the inline functions such a loop shares with the library compiled for the baseline.
// Such a loop keeps GCC vectors (vector_size) in local variables only: a function that takes or
// returns one has another ABI in each compilation.
#pragma once

#include "dagrad/backends/cpu/cpu_info.hpp"

#if defined(__x86_64__)
#define DAGRAD_AVX512_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq")))
#else
#define DAGRAD_AVX512_TARGET
#endif

namespace dagrad::cpu {

// N lanes of T as one GCC vector (the element loops' register-held running values).
template <class T, int N>
using GccVector [[gnu::vector_size(N * sizeof(T))]] = T;

// Whether to call the AVX-512 compilation.
inline bool use_avx512() {
#if defined(__x86_64__)
  return cpu_info().avx512;
#else
  return false;
#endif
}

}  // namespace dagrad::cpu
