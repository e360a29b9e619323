// ApplyAdam's per-call constants as the ISA loops take them: a plain struct, so that the ISA
// files include no header with inline functions (ops::AdamCoefficients computes them).
#pragma once

namespace dagrad::cpu {

struct AdamConstants {
  double lr_t, beta1, beta2, epsilon;  // lr_t: the learning rate with TF's bias correction folded in
  bool nesterov;
};

}  // namespace dagrad::cpu
