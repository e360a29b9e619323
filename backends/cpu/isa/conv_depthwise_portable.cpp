// The depthwise conv micro-kernel compiled for any CPU (4-float vectors: SSE2 on every x86-64, NEON elsewhere).
#define DAGRAD_ISA_NS portable
#define DAGRAD_VL 4
#define DAGRAD_NV_MAX 2
#define DAGRAD_ROWS 4
#define DAGRAD_REGS 16
#include "conv_depthwise_microkernels.inc"
