// The interface of the per-ISA float32 micro-kernels of the NCHW conv paths
// (isa/conv_nchw_microkernels.inc) and the run-time choice among them (AVX-512, AVX2+FMA, SSE2).
// In NCHW the pixel axis is contiguous, so these vectorise along output (or input) columns.
#pragma once

namespace dagrad::cpu {

// Segments tiles are at most kNchwMaxRows x kNchwMaxSegments.
inline constexpr int kNchwMaxRows = 8;
inline constexpr int kNchwMaxSegments = 4;

struct NchwMicroKernels {
  int vector_width;                        // floats per vector register = lanes of one segment
  int max_segments;                        // segments (vectors) per row of a segments tile on this ISA
  int segment_rows[kNchwMaxSegments + 1];  // preferred rows for a tile of nv segments (index nv)
  // A segment is vector_width consecutive columns of one row. For r < mr, v < nv:
  //   c[v][r*ldc + 0:valid[v]] (+)= sum_{t<taps} sum_{j<len} a[t][j*lda + r] * b[t*nv + v][j*ldb + lane]
  // b must be readable for vector_width floats; only the first valid[v] lanes of c are touched.
  void (*segments)(int mr, int nv, const float* const* a, long long lda, const float* const* b, long long ldb,
                   long long taps, long long len, float* const* c, long long ldc, const int* valid, bool accumulate);
};

// The best set this CPU supports (checked once).
const NchwMicroKernels& nchw_micro_kernels();

}  // namespace dagrad::cpu
