// Picks the widest transpose set the CPU runs (isa/transpose_avx2.cpp, or the scalar loops below)
// and splits batched transposes into parallel 64 x 64 blocks.
#include "dagrad/backends/cpu/transpose.hpp"

#include <algorithm>

#include <tbb/parallel_for.h>

#include "dagrad/backends/cpu/cpu_info.hpp"

namespace dagrad::cpu {
#if defined(__x86_64__)
namespace avx2_transpose {
void block32(const float* in, long long in_stride, float* out, long long out_stride, long long rows, long long cols);
void block16(const std::uint16_t* in, long long in_stride, std::uint16_t* out, long long out_stride, long long rows,
             long long cols);
}  // namespace avx2_transpose
#endif

namespace {

using i64 = std::int64_t;

constexpr i64 kBlock = 64;

template <class E>
void scalar_block(const E* in, long long in_stride, E* out, long long out_stride, long long rows, long long cols) {
  for (long long j = 0; j < cols; ++j)
    for (long long i = 0; i < rows; ++i) out[j * out_stride + i] = in[i * in_stride + j];
}

const TransposeKernels scalar_kernels{"scalar", &scalar_block<float>, &scalar_block<std::uint16_t>};
#if defined(__x86_64__)
const TransposeKernels avx2_kernels{"avx2", &avx2_transpose::block32, &avx2_transpose::block16};
#endif

const TransposeKernels& active_kernels() {
  static const TransposeKernels* const active = usable_transpose_kernels().front();
  return *active;
}

// The 64 x 64 blocks of every image, in parallel; `block` transposes one.
template <class E, class Block>
void blocked(const E* in, i64 images, i64 rows, i64 cols, E* out, Block block) {
  const i64 rblocks = (rows + kBlock - 1) / kBlock, cblocks = (cols + kBlock - 1) / kBlock;
  tbb::parallel_for(i64{0}, images * cblocks * rblocks, [&](i64 task) {
    const i64 n = task / (cblocks * rblocks), c0 = task / rblocks % cblocks * kBlock, r0 = task % rblocks * kBlock;
    const i64 image = n * rows * cols;
    block(in + image + r0 * cols + c0, cols, out + image + c0 * rows + r0, rows, std::min(kBlock, rows - r0),
          std::min(kBlock, cols - c0));
  });
}

const std::uint16_t* bits(const half* p) { return reinterpret_cast<const std::uint16_t*>(p); }
const std::uint16_t* bits(const bfloat16* p) { return reinterpret_cast<const std::uint16_t*>(p); }
std::uint16_t* bits(half* p) { return reinterpret_cast<std::uint16_t*>(p); }
std::uint16_t* bits(bfloat16* p) { return reinterpret_cast<std::uint16_t*>(p); }

}  // namespace

std::vector<const TransposeKernels*> usable_transpose_kernels() {
  std::vector<const TransposeKernels*> sets;
#if defined(__x86_64__)
  if (cpu_info().avx2_fma) sets.push_back(&avx2_kernels);
#endif
  sets.push_back(&scalar_kernels);
  return sets;
}

void transpose_block(const float* in, i64 in_stride, float* out, i64 out_stride, i64 rows, i64 cols) {
  active_kernels().block32(in, in_stride, out, out_stride, rows, cols);
}
void transpose_block(const half* in, i64 in_stride, half* out, i64 out_stride, i64 rows, i64 cols) {
  active_kernels().block16(bits(in), in_stride, bits(out), out_stride, rows, cols);
}
void transpose_block(const bfloat16* in, i64 in_stride, bfloat16* out, i64 out_stride, i64 rows, i64 cols) {
  active_kernels().block16(bits(in), in_stride, bits(out), out_stride, rows, cols);
}

void transpose_images(const float* in, i64 images, i64 rows, i64 cols, float* out) {
  blocked(in, images, rows, cols, out, active_kernels().block32);
}
void transpose_images(const half* in, i64 images, i64 rows, i64 cols, half* out) {
  blocked(bits(in), images, rows, cols, bits(out), active_kernels().block16);
}
void transpose_images(const bfloat16* in, i64 images, i64 rows, i64 cols, bfloat16* out) {
  blocked(bits(in), images, rows, cols, bits(out), active_kernels().block16);
}

}  // namespace dagrad::cpu
