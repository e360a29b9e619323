// The interface of the per-ISA float32 depthwise conv micro-kernel (isa/conv_depthwise_microkernels.inc)
// and the run-time choice among its builds (AVX-512, AVX2+FMA, SSE2).
#pragma once

namespace dagrad::cpu {

// One call computes at most kMaxDepthwiseRows rows.
inline constexpr int kMaxDepthwiseRows = 8;

struct DepthwiseKernels {
  int vector_width;  // floats per vector register
  int tile_rows;     // preferred rows (pixels) per call for this ISA's register file
  // out[r][0:n] (+)= sum_{i<len} a[i*mr + r][0:n] * b[i][0:n], r < mr <= kMaxDepthwiseRows: a
  // channel-wise product summed over i in order. Rows are output pixels and i the filter taps
  // (Conv2D, input gradient), or rows are taps and i the pixels (filter gradient). No lane
  // beyond n is read, so nothing is multiplied that the caller did not ask for.
  void (*taps)(int mr, long long n, const float* const* a, const float* const* b, long long len, float* const* out,
               bool accumulate);
};

// The best build this CPU supports (checked once).
const DepthwiseKernels& depthwise_kernels();

}  // namespace dagrad::cpu
