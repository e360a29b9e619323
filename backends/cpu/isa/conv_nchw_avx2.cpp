// The NCHW conv micro-kernels compiled for AVX2 + FMA (8 floats per register, 16 registers).
#define DAGRAD_ISA_NS avx2
#define DAGRAD_VL 8
#define DAGRAD_SEG_MAX 2
#define DAGRAD_SEG_ROWS \
  { 0, 8, 6, 0, 0 }
#include "conv_nchw_microkernels.inc"
