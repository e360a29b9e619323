// The depthwise conv micro-kernel compiled for AVX2 + FMA (8 floats per register, 16 registers).
#define DAGRAD_ISA_NS avx2
#define DAGRAD_VL 8
#define DAGRAD_NV_MAX 2
#define DAGRAD_ROWS 4
#define DAGRAD_REGS 16
#include "conv_depthwise_microkernels.inc"
