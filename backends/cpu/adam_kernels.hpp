// ApplyAdam's element loops over float32 and float64 arrays: AVX-512 (8 double lanes) where the
// running CPU has it, else the scalar ops::adam_update; every set gives the scalar update's bits.
#pragma once

#include <vector>

#include "dagrad/backends/cpu/isa/adam_constants.hpp"

namespace dagrad::cpu {

struct AdamKernels {
  const char* name;  // "avx512" or "scalar"
  void (*update_float)(float* w, float* m, float* v, const float* g, long long count, const AdamConstants& k);
  void (*update_double)(double* w, double* m, double* v, const double* g, long long count, const AdamConstants& k);
};

// The sets this CPU can run, widest first: ApplyAdam uses the first; tests check each.
std::vector<const AdamKernels*> usable_adam_kernels();

}  // namespace dagrad::cpu
