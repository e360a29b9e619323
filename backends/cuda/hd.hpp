// DAGRAD_HD marks index arithmetic shared by CUDA kernels and the host tests (plain C++ for g++).
#pragma once

#if defined(__CUDACC__)
#define DAGRAD_HD __host__ __device__ __forceinline__
#else
#define DAGRAD_HD inline
#endif
