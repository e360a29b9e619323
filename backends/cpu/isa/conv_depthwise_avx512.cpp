// The depthwise conv micro-kernel compiled for AVX-512 (16 floats per register, 32 registers).
#define DAGRAD_ISA_NS avx512
#define DAGRAD_VL 16
#define DAGRAD_NV_MAX 4
#define DAGRAD_ROWS 6
#define DAGRAD_REGS 32
#include "conv_depthwise_microkernels.inc"
