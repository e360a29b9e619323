// The NCHW conv micro-kernels compiled for AVX-512 (16 floats per register, 32 registers).
#define DAGRAD_ISA_NS avx512
#define DAGRAD_VL 16
#define DAGRAD_SEG_MAX 4
#define DAGRAD_SEG_ROWS \
  { 0, 8, 8, 8, 6 }
#include "conv_nchw_microkernels.inc"
