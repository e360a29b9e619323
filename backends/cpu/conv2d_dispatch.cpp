// Chooses the conv path per call: for NHWC depthwise convs the depthwise kernels; for bfloat16
// NHWC the native AVX-512 BF16 kernels where the CPU has them; else the float32 NHWC or NCHW
// micro-kernel path where it applies (half and bfloat16 there and on the depthwise kernels too,
// widened to float32 first: workspace = the two inputs and the output in float32),
// else the generic path. The choice depends on shapes, attributes and the CPU, and on whether an
// input that a fast path would multiply by padding zeros holds Inf or NaN (see has_padding).
// Size arithmetic: every kernel is entered from here with non-empty tensors only, so products of
// one tensor's dims (element counts, activation strides, offsets of elements inside it) are
// bounded by its allocated element count; positions o * stride + k * dilation by the
// Conv2DGeometry guarantee; planner predicates that combine attributes run in 128 bits or double.
#include <algorithm>
#include <initializer_list>
#include <memory>
#include <type_traits>
#include <vector>

#include <tbb/parallel_for.h>

#include "dagrad/backends/cpu/all_finite.hpp"
#include "dagrad/backends/cpu/conv2d_kernels.hpp"
#include "dagrad/backends/cpu/conv2d_nchw_kernels.hpp"
#include "dagrad/backends/cpu/float_buffer.hpp"
#include "dagrad/core/checked.hpp"

namespace dagrad::cpu {
namespace {

using ops::Conv2DGeometry;
using i64 = std::int64_t;

// Element counts: 0 where any dim is 0 (a huge dim beside a zero one is a legal empty tensor),
// else the checked product (the tensor exists, so it fits).
i64 element_count(std::initializer_list<i64> dims) {
  for (const i64 d : dims)
    if (d == 0) return 0;
  return checked_product(dims, "Conv2D: tensor elements");
}
i64 input_size(const Conv2DGeometry& g) { return element_count({g.batch, g.in_rows, g.in_cols, g.in_depth}); }
i64 output_size(const Conv2DGeometry& g) { return element_count({g.batch, g.out_rows, g.out_cols, g.out_depth}); }
i64 filter_size(const Conv2DGeometry& g) {
  return element_count({g.filter_rows, g.filter_cols, g.filter_in_depth, g.out_depth});
}

// The fast paths scan (and some multiply) taps that fall in the padding or, for the input
// gradient, between the strides, and size some buffers by the filter's taps. Where the scanned
// (position, tap) pairs outnumber those that touch real input by more than kMaxWaste along the
// two axes together, or the filter has more than kMaxFastTaps taps, the generic path runs: its
// tap ranges are closed-form and its workspace does not grow with the geometry. So every call
// costs a small multiple of its real multiply-adds plus its input and output sizes.
constexpr double kMaxWaste = 16;
constexpr i64 kMaxFastTaps = 4096;
bool fast_paths_bounded(const Conv2DGeometry& g, bool scans_input_positions) {
  if (g.filter_rows > kMaxFastTaps || g.filter_cols > kMaxFastTaps ||
      g.filter_rows * g.filter_cols > kMaxFastTaps)  // both <= 4096: no overflow
    return false;
  const auto scanned = [&](i64 in, i64 out, i64 taps) {
    return static_cast<double>(scans_input_positions ? in : out) * static_cast<double>(taps);
  };
  const double real = static_cast<double>(ops::conv_real_tap_pairs(g.out_rows, g.stride_rows, g.dilation_rows,
                                                                   g.pad_top, g.in_rows, g.filter_rows)) *
                      static_cast<double>(ops::conv_real_tap_pairs(g.out_cols, g.stride_cols, g.dilation_cols,
                                                                   g.pad_left, g.in_cols, g.filter_cols));
  const double scan = scanned(g.in_rows, g.out_rows, g.filter_rows) * scanned(g.in_cols, g.out_cols, g.filter_cols);
  return scan <= kMaxWaste * real + 4096;  // tiny calls pass whatever their shape
}

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
  if (conv2d_forward_strips_apply(g)) return conv2d_forward_strips;  // first layers
  if (conv2d_fast_path_applies(g)) return conv2d_forward_fast;
  return conv2d_nchw_fast_path_applies(g) ? conv2d_forward_fast_nchw : nullptr;
}
FastFn fast_backprop_input(const Conv2DGeometry& g) {
  if (conv2d_fast_path_applies(g)) return conv2d_backprop_input_fast;
  return conv2d_nchw_fast_path_applies(g) ? conv2d_backprop_input_fast_nchw : nullptr;
}
FastFn fast_backprop_filter(const Conv2DGeometry& g) {
  if (conv2d_filter_strips_apply(g)) return conv2d_backprop_filter_strips<float>;          // first layers
  if (g.data_format == ops::DataFormat::NHWC) return conv2d_backprop_filter_fast;          // any groups
  return conv2d_filter_nchw_slabs_apply(g) ? conv2d_backprop_filter_nchw_slabs : nullptr;  // NCHW on NHWC kernels
}

// Runs a float32 fast kernel on T inputs a, b: in place for float32, else widened (workspace:
// the two inputs and the output in float32).
template <class T>
void run_fast(const Conv2DGeometry& g, FastFn fast, const T* a, i64 na, const T* b, i64 nb, T* out, i64 nout) {
  if constexpr (std::is_same_v<T, float>) {
    fast(g, a, b, out);
  } else {
    FloatBuffer result(nout);
    fast(g, to_float(a, na).data(), to_float(b, nb).data(), result.data());
    from_float(result, out);
  }
}

template <class T>
constexpr bool kHasFastPaths = std::is_same_v<T, float> || is_reduced_float_v<T>;

// Whether T is bfloat16 and its native kernels apply (short_side as in bf16_native_applies).
template <class T>
bool native_bf16(const Conv2DGeometry& g, i64 short_side) {
  if constexpr (std::is_same_v<T, bfloat16>) {
    return bf16_native_applies(g, short_side);
  } else {
    return false;
  }
}

// Inf and NaN. The reference and the generic path skip every tap that falls in the padding, so
// padding contributes nothing; the fast paths multiply some inputs by zeros standing for it (zero
// rows, zero-padded panels, zero-packed edge pixels) or by zero vector lanes they then sum, and
// 0 * Inf = NaN would appear where the reference has a finite value or an infinity:
//   Conv2D, every fast path: the filter, by the zeros of the padding;
//   input gradient, every fast path: the filter, by zero dy rows for the taps of a pixel that
//     reach no output position (in the padding, or between the strides);
//   filter gradient, float32 (NCHW on NHWC slabs): dy, by the zero-padded strips of small-channel
//     layers or the zero-packed edge pixels of multi-tap segments; native bfloat16: dy, by the
//     zero x words of taps in the padding (where little of the work is padding) and, on strips,
//     by the right neighbour of a row's lone last pixel (paired with a zero dy);
//   NHWC depthwise, all three ops: nothing (taps in the padding or reaching no output are
//     skipped, vector tails are never loaded), so these calls need no scan.
// Zero lanes that are never stored (column tails of Conv2D and the input gradient) do no harm.
// Where such an input holds Inf or NaN the call takes the generic path: one scan of that input
// (the filter, small), and none where the zeros do not exist (e.g. VALID without tails). The
// filter gradient's inputs are large, so it scans its small output instead: every product with
// an Inf or NaN is Inf or NaN and keeps its sum so, hence a finite result met none of them and
// equals the generic path's; a non-finite one is computed again on the generic path (where it is
// non-finite anyway, the price is only time).
bool has_padding(const Conv2DGeometry& g) {
  return g.pad_top > 0 || g.pad_bottom > 0 || g.pad_left > 0 || g.pad_right > 0;
}

// Whether along an axis some input position reaches no output position through some tap: always
// with a stride above 1 (positions between the strides); with stride 1 the positions reached,
// i + pad_before - k * dilation, span [pad_before - (window - 1), in - 1 + pad_before], inside
// [0, out) = [0, in + pad_before + pad_after - window] only where both pads are window - 1 or more.
bool misses_outputs(i64 stride, i64 window, i64 pad_before, i64 pad_after) {
  return stride > 1 || pad_before < window - 1 || pad_after < window - 1;
}
bool misses_outputs(const Conv2DGeometry& g) {
  return misses_outputs(g.stride_rows, g.effective_filter_rows(), g.pad_top, g.pad_bottom) ||
         misses_outputs(g.stride_cols, g.effective_filter_cols(), g.pad_left, g.pad_right);
}

}  // namespace

template <class T>
void conv2d_forward(const Conv2DGeometry& g, const T* x, const T* f, T* y) {
  const i64 ny = output_size(g);
  if (ny == 0) return;                              // before any loop: an empty output may still have a huge dimension
  if (input_size(g) == 0 || filter_size(g) == 0) {  // no tap reads anything
    std::fill_n(y, ny, T(0));
    return;
  }
  if constexpr (kHasFastPaths<T>) {
    if (!fast_paths_bounded(g, false)) return conv2d_forward_generic(g, x, f, y);
    if (conv2d_depthwise_applies(g))  // skips the padding taps itself: no finite check
      return run_fast(g, conv2d_forward_depthwise, x, input_size(g), f, filter_size(g), y, output_size(g));
    const bool native = native_bf16<T>(g, g.in_depth);
    const FastFn fast = native ? nullptr : fast_forward(g);
    if ((native || fast) && (!has_padding(g) || all_finite(f, filter_size(g)))) {
      if constexpr (std::is_same_v<T, bfloat16>) {
        if (native) return conv2d_forward_bf16(g, x, f, y);
      }
      return run_fast(g, fast, x, input_size(g), f, filter_size(g), y, output_size(g));
    }
  }
  conv2d_forward_generic(g, x, f, y);
}

template <class T>
void conv2d_backprop_input(const Conv2DGeometry& g, const T* f, const T* dy, T* dx) {
  const i64 nx = input_size(g);
  if (nx == 0) return;
  if (output_size(g) == 0 || filter_size(g) == 0) {  // nothing flows back
    std::fill_n(dx, nx, T(0));
    return;
  }
  if constexpr (kHasFastPaths<T>) {
    if (!fast_paths_bounded(g, true)) return conv2d_backprop_input_generic(g, f, dy, dx);
    if (conv2d_depthwise_applies(g))
      return run_fast(g, conv2d_backprop_input_depthwise, f, filter_size(g), dy, output_size(g), dx, input_size(g));
    const bool native = native_bf16<T>(g, std::min(g.out_depth, g.in_depth));
    const FastFn fast = native ? nullptr : fast_backprop_input(g);
    if ((native || fast) && (!misses_outputs(g) || all_finite(f, filter_size(g)))) {
      if constexpr (std::is_same_v<T, bfloat16>) {
        if (native) return conv2d_backprop_input_bf16(g, f, dy, dx);
      }
      return run_fast(g, fast, f, filter_size(g), dy, output_size(g), dx, input_size(g));
    }
  }
  conv2d_backprop_input_generic(g, f, dy, dx);
}

template <class T>
void conv2d_backprop_filter(const Conv2DGeometry& g, const T* x, const T* dy, T* df) {
  const i64 nf = filter_size(g);
  if (nf == 0) return;
  if (input_size(g) == 0 || output_size(g) == 0) {  // no products at all
    std::fill_n(df, nf, T(0));
    return;
  }
  if constexpr (kHasFastPaths<T>) {
    if (!fast_paths_bounded(g, false)) return conv2d_backprop_filter_generic(g, x, dy, df);
    if (conv2d_depthwise_applies(g))
      return run_fast(g, conv2d_backprop_filter_depthwise, x, input_size(g), dy, output_size(g), df, filter_size(g));
    if constexpr (std::is_same_v<T, bfloat16>) {
      if (native_bf16<T>(g, g.in_depth)) {
        conv2d_backprop_filter_bf16(g, x, dy, df);
        if (all_finite(df, filter_size(g))) return;
        return conv2d_backprop_filter_generic(g, x, dy, df);
      }
    }
    if (const FastFn fast = fast_backprop_filter(g)) {
      // The strips path widens half/bfloat16 as it copies: no whole-tensor float32 copies.
      if (is_reduced_float_v<T> && conv2d_filter_strips_apply(g))
        conv2d_backprop_filter_strips(g, x, dy, df);
      else
        run_fast(g, fast, x, input_size(g), dy, output_size(g), df, filter_size(g));
      if (all_finite(df, filter_size(g))) return;
    }
  }
  conv2d_backprop_filter_generic(g, x, dy, df);
}

#define DAGRAD_INSTANTIATE(T)                                                            \
  template void conv2d_forward<T>(const Conv2DGeometry&, const T*, const T*, T*);        \
  template void conv2d_backprop_input<T>(const Conv2DGeometry&, const T*, const T*, T*); \
  template void conv2d_backprop_filter<T>(const Conv2DGeometry&, const T*, const T*, T*);
DAGRAD_INSTANTIATE(half)
DAGRAD_INSTANTIATE(bfloat16)
DAGRAD_INSTANTIATE(float)
DAGRAD_INSTANTIATE(double)
#undef DAGRAD_INSTANTIATE

}  // namespace dagrad::cpu
