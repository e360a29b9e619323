// NCHW 1x1 convolutions without strides or padding are one GEMM per image, on the layout as it is:
// Conv2D y[n] (K x HW) = f^T (K x C) . x[n] (C x HW), the input gradient dx[n] (C x HW) = f (C x K)
// . dy[n] (K x HW), f being HWIO's C x K matrix, on gemm.hpp. No transposes of the activations
// (nchw_slabs would move both through memory once more) and no panels (nchw_fast copies its rows).
#include "dagrad/backends/cpu/conv2d/kernels.hpp"
#include "dagrad/backends/cpu/float_buffer.hpp"
#include "dagrad/backends/cpu/gemm.hpp"
#include "dagrad/backends/cpu/transpose.hpp"

namespace dagrad::cpu {
namespace {

using ops::Conv2DGeometry;

// Every image: (rows x len) . (len x pixels), the images' activations `len` and `rows` planes apart.
void gemm_per_image(const Conv2DGeometry& g, const float* a, std::int64_t rows, std::int64_t len, const float* b,
                    float* c) {
  const std::int64_t pixels = g.in_rows * g.in_cols;
  gemm({.m = rows,
        .k = len,
        .n = pixels,
        .a = a,
        .lda = len,
        .b = b,
        .ldb = pixels,
        .c = c,
        .ldc = pixels,
        .batch = g.batch,
        .b_stride = len * pixels,
        .c_stride = rows * pixels});
}

}  // namespace

bool conv2d_nchw_pointwise_applies(const Conv2DGeometry& g) {
  return g.data_format == ops::DataFormat::NCHW && g.groups == 1 && g.filter_rows == 1 && g.filter_cols == 1 &&
         g.stride_rows == 1 && g.stride_cols == 1 && g.pad_top == 0 && g.pad_bottom == 0 && g.pad_left == 0 &&
         g.pad_right == 0;
}

void conv2d_forward_nchw_pointwise(const Conv2DGeometry& g, const float* x, const float* f, float* y) {
  FloatBuffer ft(g.in_depth * g.out_depth);
  transpose_images(f, 1, g.in_depth, g.out_depth, ft.data());
  gemm_per_image(g, ft.data(), g.out_depth, g.in_depth, x, y);
}

void conv2d_backprop_input_nchw_pointwise(const Conv2DGeometry& g, const float* f, const float* dy, float* dx) {
  gemm_per_image(g, f, g.in_depth, g.out_depth, dy, dx);
}

}  // namespace dagrad::cpu
