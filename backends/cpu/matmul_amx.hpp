// bfloat16 MatMul on AMX-BF16 tiles (matmul_amx.cpp), used by the CPU MatMul kernel where
// amx_kernels() is available; the tile kernels are a parameter so tests run it on emulated tiles.
#pragma once

#include <cstdint>

namespace dagrad::cpu {

struct AmxKernels;

// c[m, n] = bfloat16(a[m, k] b[k, n]) on row-major bfloat16 bits, float32 accumulation (in the
// tiles, over k in blocks of 32 in order), one rounding; the bits do not depend on the thread count.
void matmul_bf16_amx(const std::uint16_t* a, const std::uint16_t* b, std::uint16_t* c, std::int64_t m, std::int64_t k,
                     std::int64_t n, const AmxKernels& tiles);

}  // namespace dagrad::cpu
