// Chooses the conv path per call: for bfloat16 NHWC the native AVX-512 BF16 kernels where the CPU
// has them; else the float32 NHWC or NCHW micro-kernel path where it applies (half and bfloat16
// there too, widened to float32 first: workspace = the two inputs and the output in float32),
// else the generic path. The choice depends on shapes, attributes and the CPU only.
#include <algorithm>
#include <memory>
#include <vector>

#include <tbb/parallel_for.h>

#include "dagrad/backends/cpu/conv2d_kernels.hpp"
#include "dagrad/backends/cpu/conv2d_nchw_kernels.hpp"
#include "dagrad/backends/cpu/float_buffer.hpp"

namespace dagrad::cpu {
namespace {

using ops::Conv2DGeometry;
using i64 = std::int64_t;

i64 input_size(const Conv2DGeometry& g) { return g.batch * g.in_rows * g.in_cols * g.in_depth; }
i64 output_size(const Conv2DGeometry& g) { return g.batch * g.out_rows * g.out_cols * g.out_depth; }
i64 filter_size(const Conv2DGeometry& g) { return g.filter_rows * g.filter_cols * g.filter_in_depth * g.out_depth; }

// The native bfloat16 kernels: NHWC, groups = 1, AVX-512 BF16, and a reduction (channels, or
// filters for the input gradient, whose C-wide rows must be as wide; channels are the panel rows
// of the filter gradient) of at least 16: below that the pair steps are mostly overhead and the
// float32 path is faster.
bool bf16_native_applies(const Conv2DGeometry& g, i64 short_side) {
  return conv2d_fast_path_applies(g) && g.groups == 1 && short_side >= 16 && conv2d_bf16_native_available();
}

// The float32 fast kernel of each op for this call's layout, or nullptr where none applies.
using FastFn = void (*)(const Conv2DGeometry&, const float*, const float*, float*);
FastFn fast_forward(const Conv2DGeometry& g) {
  if (conv2d_fast_path_applies(g)) return conv2d_forward_fast;
  return conv2d_nchw_fast_path_applies(g) ? conv2d_forward_fast_nchw : nullptr;
}
FastFn fast_backprop_input(const Conv2DGeometry& g) {
  if (conv2d_fast_path_applies(g)) return conv2d_backprop_input_fast;
  return conv2d_nchw_fast_path_applies(g) ? conv2d_backprop_input_fast_nchw : nullptr;
}
FastFn fast_backprop_filter(const Conv2DGeometry& g) {
  if (conv2d_filter_strips_apply(g)) return conv2d_backprop_filter_strips;            // first layers
  if (g.data_format == ops::DataFormat::NHWC) return conv2d_backprop_filter_fast;  // any groups
  return conv2d_nchw_fast_path_applies(g) ? conv2d_backprop_filter_fast_nchw : nullptr;
}

}  // namespace

template <class T>
void conv2d_forward(const Conv2DGeometry& g, const T* x, const T* f, T* y) {
  if constexpr (std::is_same_v<T, float>) {
    if (FastFn fast = fast_forward(g)) return fast(g, x, f, y);
  } else if constexpr (is_reduced_float_v<T>) {
    if constexpr (std::is_same_v<T, bfloat16>) {  // native vdpbf16ps path where the CPU has it
      if (bf16_native_applies(g, g.in_depth)) return conv2d_forward_bf16(g, x, f, y);
    }
    if (FastFn fast = fast_forward(g)) {
      FloatBuffer out(output_size(g));
      fast(g, to_float(x, input_size(g)).data(), to_float(f, filter_size(g)).data(), out.data());
      return from_float(out, y);
    }
  }
  conv2d_forward_generic(g, x, f, y);
}

template <class T>
void conv2d_backprop_input(const Conv2DGeometry& g, const T* f, const T* dy, T* dx) {
  if constexpr (std::is_same_v<T, float>) {
    if (FastFn fast = fast_backprop_input(g)) return fast(g, f, dy, dx);
  } else if constexpr (is_reduced_float_v<T>) {
    if constexpr (std::is_same_v<T, bfloat16>) {
      if (bf16_native_applies(g, std::min(g.out_depth, g.in_depth))) return conv2d_backprop_input_bf16(g, f, dy, dx);
    }
    if (FastFn fast = fast_backprop_input(g)) {
      FloatBuffer out(input_size(g));
      fast(g, to_float(f, filter_size(g)).data(), to_float(dy, output_size(g)).data(), out.data());
      return from_float(out, dx);
    }
  }
  conv2d_backprop_input_generic(g, f, dy, dx);
}

template <class T>
void conv2d_backprop_filter(const Conv2DGeometry& g, const T* x, const T* dy, T* df) {
  if constexpr (std::is_same_v<T, float>) {
    if (FastFn fast = fast_backprop_filter(g)) return fast(g, x, dy, df);
  } else if constexpr (is_reduced_float_v<T>) {
    if constexpr (std::is_same_v<T, bfloat16>) {  // native vdpbf16ps path where the CPU has it
      if (bf16_native_applies(g, g.in_depth)) return conv2d_backprop_filter_bf16(g, x, dy, df);
    }
    if (FastFn fast = fast_backprop_filter(g)) {
      FloatBuffer out(filter_size(g));
      fast(g, to_float(x, input_size(g)).data(), to_float(dy, output_size(g)).data(), out.data());
      return from_float(out, df);
    }
  }
  conv2d_backprop_filter_generic(g, x, dy, df);
}

#define DAGRAD_INSTANTIATE(T)                                                                   \
  template void conv2d_forward<T>(const Conv2DGeometry&, const T*, const T*, T*);              \
  template void conv2d_backprop_input<T>(const Conv2DGeometry&, const T*, const T*, T*);       \
  template void conv2d_backprop_filter<T>(const Conv2DGeometry&, const T*, const T*, T*);
DAGRAD_INSTANTIATE(half)
DAGRAD_INSTANTIATE(bfloat16)
DAGRAD_INSTANTIATE(float)
DAGRAD_INSTANTIATE(double)
#undef DAGRAD_INSTANTIATE

}  // namespace dagrad::cpu
