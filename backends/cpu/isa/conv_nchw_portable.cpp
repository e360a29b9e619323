// The NCHW conv micro-kernels for any CPU (4-float vectors: SSE2 on every x86-64, NEON elsewhere).
#define DAGRAD_ISA_NS portable
#define DAGRAD_VL 4
#define DAGRAD_SEG_MAX 2
#define DAGRAD_SEG_ROWS \
  { 0, 8, 6, 0, 0 }
#include "conv_nchw_microkernels.inc"
