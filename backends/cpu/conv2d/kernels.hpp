// The CPU conv kernels as plain functions on validated geometry and raw pointers, so tests and
// benchmarks can call them without a registry. Layouts: activations in g.data_format (NHWC or
// NCHW), filter HWIO. All run inside the caller's TBB arena and are deterministic: each output
// element is summed in an order fixed by the shapes alone, whatever the thread count.
#pragma once

#include <cstdint>
#include <string_view>

#include "dagrad/backends/cpu/conv2d/epilogue.hpp"
#include "dagrad/core/dtype.hpp"
#include "dagrad/ops/conv_geometry.hpp"

namespace dagrad::cpu {

// Element strides of a 4-D activation tensor with `rows x cols x depth` per image.
struct ActStrides {
  std::int64_t n, h, w, c;
};
inline ActStrides act_strides(ops::DataFormat format, std::int64_t rows, std::int64_t cols, std::int64_t depth) {
  if (format == ops::DataFormat::NHWC) return {rows * cols * depth, cols * depth, depth, 1};
  return {depth * rows * cols, cols, 1, rows * cols};
}

// The three ops through their path tables (paths.hpp, dispatch.cpp): `path` empty takes the first
// path that applies, else the path of that name (InvalidArgument, naming `op` or the op family,
// where it is unknown or does not apply to this call). Each returns the name of the path that ran
// ("generic" where a finite rule sent the call there; "empty" for an empty input or output).
// y = conv(x, f).
template <class T>
std::string_view conv2d_forward(const ops::Conv2DGeometry& g, const T* x, const T* f, T* y, std::string_view path = {},
                                std::string_view op = {});
// _FusedConv2D: y = conv(x, f) + bias (then Relu), with the bits of the three ops run one by one.
// A path with a fused kernel (ConvPath::fused_kernel<T>) applies the epilogue to outputs still
// in cache; the others run the kernel, then bias_add_relu over y.
template <class T>
std::string_view conv2d_forward_fused(const ops::Conv2DGeometry& g, const T* x, const T* f, const T* bias, bool relu,
                                      T* y, std::string_view path = {}, std::string_view op = {});
// dx = gradient of conv wrt its input, given the filter and dy.
template <class T>
std::string_view conv2d_backprop_input(const ops::Conv2DGeometry& g, const T* f, const T* dy, T* dx,
                                       std::string_view path = {}, std::string_view op = {});
// df = gradient of conv wrt its filter, given the input and dy.
template <class T>
std::string_view conv2d_backprop_filter(const ops::Conv2DGeometry& g, const T* x, const T* dy, T* df,
                                        std::string_view path = {}, std::string_view op = {});

// The layout-, group- and dtype-generic paths (accumulating in accumulator_t<T>), used where no
// fast path applies; exposed so tests can check both paths against the reference.
template <class T>
void conv2d_forward_generic(const ops::Conv2DGeometry& g, const T* x, const T* f, T* y);
template <class T>
void conv2d_backprop_input_generic(const ops::Conv2DGeometry& g, const T* f, const T* dy, T* dx);
template <class T>
void conv2d_backprop_filter_generic(const ops::Conv2DGeometry& g, const T* x, const T* dy, T* df);

// The float32 NHWC fast paths on register-tiled micro-kernels (implicit GEMM): forward and input
// gradient where conv2d_fast_path_applies (groups = 1 or not too thin), the filter gradient for any groups.
// Like the other fast paths (NCHW, native bfloat16) they multiply some inputs by zeros standing for
// the padding, so those inputs must be finite; dispatch.cpp routes the others to the generic
// path and lists which input of which path meets such zeros.
bool conv2d_fast_path_applies(const ops::Conv2DGeometry& g);
void conv2d_forward_fast(const ops::Conv2DGeometry& g, const float* x, const float* f, float* y);
void conv2d_backprop_input_fast(const ops::Conv2DGeometry& g, const float* f, const float* dy, float* dx);
void conv2d_backprop_filter_fast(const ops::Conv2DGeometry& g, const float* x, const float* dy, float* df);

// The float32 filter gradient (NHWC or NCHW) of small-channel layers (groups = 1, KH * KW * C <= 160) on
// zero-padded input strips (filter_strips.cpp); conv2d_backprop_filter_fast otherwise.
bool conv2d_filter_strips_apply(const ops::Conv2DGeometry& g);
// The three ops by Winograd's minimal filtering on 6 x 6 or 8 x 8 tiles (winograd.cpp): float32
// NHWC, stride 1, dilations up to 4, groups = 1, 3 to 5 taps a side, at least 16 channels and
// filters. Fewer multiplications (2.8 to 6 times), other roundings: within the reference's float32
// tolerance.
bool conv2d_winograd_applies(const ops::Conv2DGeometry& g);
// The tile side Conv2D (or, with backprop_input, the input gradient) takes: 8 where it sums over at
// most 64 channels with 4 or 5 taps a side and its outputs take at least a quarter fewer products
// on 8 x 8 tiles than on 6 x 6 (winograd.cpp says why), else 6. The filter gradient always takes 6.
int conv2d_winograd_tile(const ops::Conv2DGeometry& g, bool backprop_input);
// Whether calls that force no path take it where it applies: yes unless the environment sets
// DAGRAD_CONV_WINOGRAD=0 (1 is the default; another value is an InvalidArgument naming it), read at
// each call. For users who want the direct sums' rounding, as TF_ENABLE_WINOGRAD_NONFUSED=0 is for cuDNN.
bool conv2d_winograd_by_default();
void conv2d_forward_winograd(const ops::Conv2DGeometry& g, const float* x, const float* f, float* y);
// With _FusedConv2D's epilogue (epilogue.hpp) on each tile's outputs; false where some output was
// not finite before it (the caller recomputes the call unfused).
bool conv2d_forward_winograd_fused(const ops::Conv2DGeometry& g, const float* x, const float* f, float* y,
                                   const ConvEpilogue& epilogue);
void conv2d_backprop_input_winograd(const ops::Conv2DGeometry& g, const float* f, const float* dy, float* dx);
void conv2d_backprop_filter_winograd(const ops::Conv2DGeometry& g, const float* x, const float* dy, float* df);
// half and bfloat16 are widened block by block, with the float32 path's bits before the one rounding.
template <class T>
void conv2d_backprop_filter_strips(const ops::Conv2DGeometry& g, const T* x, const T* dy, T* df);

// The float32 NHWC Conv2D of small-channel layers (groups = 1, dilation_cols = 1, C below half a
// vector) on zero-padded input strips (forward_strips.cpp); conv2d_forward_fast otherwise.
// half and bfloat16 are widened once and narrowed row by row, with the float32 path's bits.
bool conv2d_forward_strips_apply(const ops::Conv2DGeometry& g);
template <class T>
void conv2d_forward_strips(const ops::Conv2DGeometry& g, const T* x, const T* f, T* y);
// float32 with the caller's choice (tests) of zeroing each output row first and adding to it (taken
// where y outgrows the last-level cache) or writing it from zero.
void conv2d_forward_strips_with(const ops::Conv2DGeometry& g, const float* x, const float* f, float* y,
                                bool zero_rows_first);
// float32 and bfloat16 with _FusedConv2D's epilogue on each (float32) output row (always true:
// see conv2d_forward_fused).
template <class T>
bool conv2d_forward_strips_fused(const ops::Conv2DGeometry& g, const T* x, const T* f, T* y,
                                 const ConvEpilogue& epilogue);

// The float32 NHWC input gradient of layers with fewer channels than a vector (groups = 1) as one
// GEMM against the filter's taps side by side, then a col2im (input_col2im.cpp).
bool conv2d_input_col2im_applies(const ops::Conv2DGeometry& g);
void conv2d_backprop_input_col2im(const ops::Conv2DGeometry& g, const float* f, const float* dy, float* dx);
// NCHW Conv2D of first layers (C below a vector, groups = 1, unit column stride) as an im2col
// and a GEMM written straight to y's planes (forward_im2col_nchw.cpp).
bool conv2d_forward_im2col_nchw_applies(const ops::Conv2DGeometry& g);
void conv2d_forward_im2col_nchw(const ops::Conv2DGeometry& g, const float* x, const float* f, float* y);
// The input gradient's col2im in NCHW: f's rows times dy's planes, vectorised along output pixels.
bool conv2d_input_col2im_nchw_applies(const ops::Conv2DGeometry& g);
void conv2d_backprop_input_col2im_nchw(const ops::Conv2DGeometry& g, const float* f, const float* dy, float* dx);

// NCHW 1x1 convolutions without strides or padding (groups = 1) as one GEMM per image on the
// layout as it is (forward_input_nchw_pointwise.cpp).
bool conv2d_nchw_pointwise_applies(const ops::Conv2DGeometry& g);
void conv2d_forward_nchw_pointwise(const ops::Conv2DGeometry& g, const float* x, const float* f, float* y);
void conv2d_backprop_input_nchw_pointwise(const ops::Conv2DGeometry& g, const float* f, const float* dy, float* dx);
// The filter gradient of the same calls where one side has a vector of channels: one GEMM over the
// batch's pixels, one side transposed block by block in cache (filter_nchw_pointwise.cpp).
bool conv2d_filter_nchw_pointwise_applies(const ops::Conv2DGeometry& g);
void conv2d_backprop_filter_nchw_pointwise(const ops::Conv2DGeometry& g, const float* x, const float* dy, float* df);

// The NCHW ops on slabs of images transposed to NHWC, each then run by the NHWC dispatch
// (nchw_slabs.cpp): Conv2D and the input gradient in their own dtype (transposed back), the filter
// gradient in float32 (slab partials added in slab order; half widened) or bfloat16 (below).
// Where one image of both activations fits the slab cap (else the generic path reads NCHW in place).
bool conv2d_nchw_slabs_apply(const ops::Conv2DGeometry& g);
template <class T>
void conv2d_forward_nchw_slabs(const ops::Conv2DGeometry& g, const T* x, const T* f, T* y);
template <class T>
void conv2d_backprop_input_nchw_slabs(const ops::Conv2DGeometry& g, const T* f, const T* dy, T* dx);
void conv2d_backprop_filter_nchw_slabs(const ops::Conv2DGeometry& g, const float* x, const float* dy, float* df);
// The bfloat16 filter gradient with the whole batch as one slab, in bfloat16: rounded once, on the
// native bfloat16 NHWC kernels where the CPU has them.
void conv2d_backprop_filter_nchw_whole(const ops::Conv2DGeometry& g, const bfloat16* x, const bfloat16* dy,
                                       bfloat16* df);

// The float32 NHWC depthwise paths (groups = in_depth > 1, filter_in_depth = 1, any channel
// multiplier): channel-vector products that skip every tap in the padding (*_depthwise.cpp).
bool conv2d_depthwise_applies(const ops::Conv2DGeometry& g);
void conv2d_forward_depthwise(const ops::Conv2DGeometry& g, const float* x, const float* f, float* y);
void conv2d_backprop_input_depthwise(const ops::Conv2DGeometry& g, const float* f, const float* dy, float* dx);
void conv2d_backprop_filter_depthwise(const ops::Conv2DGeometry& g, const float* x, const float* dy, float* df);

// The native bfloat16 NHWC, groups = 1 filter gradient on AVX-512 BF16 (filter_bf16_native.cpp):
// float32 accumulation, one rounding to bfloat16. Call only where conv2d_bf16_native_available().
bool conv2d_bf16_native_available();
void conv2d_backprop_filter_bf16(const ops::Conv2DGeometry& g, const bfloat16* x, const bfloat16* dy, bfloat16* df);
// Whether a pair-panel filter gradient keeps the pixels whose tap is in the padding (with zero x),
// so that every tap takes the same pixels and dy is packed once per block: where little work is padding.
bool conv2d_filter_keeps_padding(const ops::Conv2DGeometry& g);
// The same filter gradient on AMX-BF16 tiles (filter_amx.cpp), where conv2d_amx_available(); the
// _with forms run on the given tile kernels (amx_emulated_kernels() in tests, on any CPU).
bool conv2d_amx_available();
void conv2d_backprop_filter_amx(const ops::Conv2DGeometry& g, const bfloat16* x, const bfloat16* dy, bfloat16* df);
struct AmxKernels;
void conv2d_backprop_filter_amx_with(const ops::Conv2DGeometry& g, const bfloat16* x, const bfloat16* dy, bfloat16* df,
                                     const AmxKernels& tiles);
// Conv2D and the input gradient on AMX-BF16 tiles (forward_amx.cpp, input_amx.cpp), likewise.
void conv2d_forward_amx(const ops::Conv2DGeometry& g, const bfloat16* x, const bfloat16* f, bfloat16* y);
void conv2d_forward_amx_with(const ops::Conv2DGeometry& g, const bfloat16* x, const bfloat16* f, bfloat16* y,
                             const AmxKernels& tiles);
void conv2d_backprop_input_amx(const ops::Conv2DGeometry& g, const bfloat16* f, const bfloat16* dy, bfloat16* dx);
void conv2d_backprop_input_amx_with(const ops::Conv2DGeometry& g, const bfloat16* f, const bfloat16* dy, bfloat16* dx,
                                    const AmxKernels& tiles);
// Conv2D and its input gradient the same way (forward_input_bf16_native.cpp).
void conv2d_forward_bf16(const ops::Conv2DGeometry& g, const bfloat16* x, const bfloat16* f, bfloat16* y);
void conv2d_backprop_input_bf16(const ops::Conv2DGeometry& g, const bfloat16* f, const bfloat16* dy, bfloat16* dx);

// The float32 NCHW fast paths of Conv2D and its input gradient (forward_input_nchw_fast.cpp; any
// stride, dilation, padding and groups, depthwise included; the filter gradient runs on the NHWC
// kernels, nchw_slabs.cpp): direct convolutions vectorised along the contiguous column axis
// on the micro-kernels of nchw_microkernels.hpp, reading per-task panels (nchw_panel.hpp), no
// whole-tensor transposes and no im2col. Workspace: the filter repacked once per call, per-thread
// panels of a few rows; results do not depend on the thread count. Applies to NCHW without an
// empty dimension and with moderate strides, paddings and dilations.
bool conv2d_nchw_fast_path_applies(const ops::Conv2DGeometry& g);
void conv2d_forward_fast_nchw(const ops::Conv2DGeometry& g, const float* x, const float* f, float* y);
void conv2d_backprop_input_fast_nchw(const ops::Conv2DGeometry& g, const float* f, const float* dy, float* dx);

// Number of fixed reduction chunks of the filter gradient: a function of the shapes only, so
// partial sums and their combine order never depend on the thread count.
std::int64_t filter_reduction_chunks(std::int64_t pixel_rows, std::int64_t tasks_per_chunk, std::int64_t filter_bytes);

}  // namespace dagrad::cpu
