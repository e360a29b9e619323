// The entry points of the three conv ops: empty tensors first, then the row of the op's path table
// (paths.cpp) that applies or is forced, run under its rule for Inf and NaN.
// Size arithmetic: every kernel is entered from here with non-empty tensors only, so products of
// one tensor's dims (element counts, activation strides, offsets of elements inside it) are
// bounded by its allocated element count; positions o * stride + k * dilation by the
// Conv2DGeometry guarantee; planner predicates that combine attributes run in 128 bits or double.
#include <algorithm>
#include <type_traits>

#include "dagrad/backends/cpu/all_finite.hpp"
#include "dagrad/backends/cpu/bias_add.hpp"
#include "dagrad/backends/cpu/conv2d/kernels.hpp"
#include "dagrad/backends/cpu/conv2d/paths.hpp"

namespace dagrad::cpu {
namespace {

using ops::Conv2DGeometry;
using i64 = std::int64_t;

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
//     skipped, vector tails are never loaded), so these calls need no scan;
//   winograd, all three ops: every value of a tile meets zeros in the transforms, which can also
//     overflow where the direct sums do not; any non-finite result is computed again (below).
// Zero lanes that are never stored (column tails of Conv2D and the input gradient) do no harm.
// Where such an input holds Inf or NaN the call takes the generic path: one scan of that input
// (the filter, small), and none where the zeros do not exist (e.g. VALID without tails). The
// filter gradient's inputs are large, so it scans its small output instead: every product with
// an Inf or NaN is Inf or NaN and keeps its sum so, hence a finite result met none of them and
// equals the generic path's; a non-finite one is computed again on the generic path (where it is
// non-finite anyway, the price is only time). The rows say which rule is theirs (FiniteRule).
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

constexpr std::string_view kOpNames[] = {"Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter"};

// Runs op's row for the call (a, b: the op's inputs in order; out: its output, of n elements),
// or the generic path (the table's last row) where the row's FiniteRule sends the call there.
template <class T>
std::string_view run_path(ConvOp op, std::string_view op_name, const Conv2DGeometry& g, const T* a, const T* b, T* out,
                          std::string_view forced) {
  const ConvPath& path =
      conv2d_choose_path(op, op_name.empty() ? kOpNames[static_cast<int>(op)] : op_name, g, dtype_of<T>, forced);
  if constexpr (std::is_same_v<T, double>) {  // only the generic path claims float64: no rule to keep
    path.kernel<T>()(g, a, b, out);
  } else {
    const ConvPath& generic_row = conv2d_path_table(op).back();
    const ConvKernel<T> generic = generic_row.kernel<T>();
    const ConvSizes n = conv2d_sizes(g);
    const auto run_generic = [&] {
      generic(g, a, b, out);
      return generic_row.name;
    };
    switch (path.finite) {
      case FiniteRule::FilterIfPadded:  // Conv2D: (x, f)
        if (has_padding(g) && !all_finite(b, n.filter)) return run_generic();
        break;
      case FiniteRule::FilterIfMissed:  // input gradient: (f, dy)
        if (misses_outputs(g) && !all_finite(a, n.filter)) return run_generic();
        break;
      case FiniteRule::None:
      case FiniteRule::RerunIfNonFinite:
        break;
    }
    path.kernel<T>()(g, a, b, out);
    const i64 out_size = op == ConvOp::Forward ? n.output : op == ConvOp::BackpropInput ? n.input : n.filter;
    if (path.finite == FiniteRule::RerunIfNonFinite && !all_finite(out, out_size)) return run_generic();
  }
  return path.name;
}

constexpr std::string_view kEmpty = "empty";

// The channel axis of Conv2D's output, for the epilogue's pass over it (as BiasAdd splits it).
ops::ChannelSplit output_split(const Conv2DGeometry& g) {
  return ops::split_at_channel(Shape(g.output_dims()), g.data_format == ops::DataFormat::NHWC ? "NHWC" : "NCHW");
}

// _FusedConv2D on a row with a fused kernel, under the row's finite rule as run_path keeps it; where
// the rule sends the call to the generic path, it runs there unfused.
std::string_view run_fused(const ConvPath& path, const Conv2DGeometry& g, const float* x, const float* f, float* y,
                           const ConvEpilogue& epilogue) {
  const ConvSizes n = conv2d_sizes(g);
  const bool scanned_out = path.finite == FiniteRule::FilterIfPadded && has_padding(g) && !all_finite(f, n.filter);
  if (!scanned_out && (path.fused_float_kernel(g, x, f, y, epilogue) || path.finite != FiniteRule::RerunIfNonFinite))
    return path.name;
  const ConvPath& generic = conv2d_path_table(ConvOp::Forward).back();
  generic.kernel<float>()(g, x, f, y);
  bias_add_relu(y, epilogue.bias, y, output_split(g), n.output, epilogue.relu);
  return generic.name;
}

}  // namespace

template <class T>
std::string_view conv2d_forward(const Conv2DGeometry& g, const T* x, const T* f, T* y, std::string_view path,
                                std::string_view op) {
  const ConvSizes n = conv2d_sizes(g);
  if (n.output == 0) return kEmpty;     // before any loop: an empty output may still have a huge dimension
  if (n.input == 0 || n.filter == 0) {  // no tap reads anything
    std::fill_n(y, n.output, T(0));
    return kEmpty;
  }
  return run_path(ConvOp::Forward, op, g, x, f, y, path);
}

template <class T>
std::string_view conv2d_forward_fused(const Conv2DGeometry& g, const T* x, const T* f, const T* bias, bool relu, T* y,
                                      std::string_view path, std::string_view op) {
  const ConvSizes n = conv2d_sizes(g);
  if (n.output == 0) return kEmpty;
  if constexpr (std::is_same_v<T, float>) {
    if (n.input > 0 && n.filter > 0) {
      const ConvPath& row = conv2d_choose_path(ConvOp::Forward, op.empty() ? kOpNames[0] : op, g, DType::Float32, path);
      if (row.fused_float_kernel) return run_fused(row, g, x, f, y, {bias, relu});
    }
  }
  const std::string_view ran = conv2d_forward(g, x, f, y, path, op);
  bias_add_relu(y, bias, y, output_split(g), n.output, relu);
  return ran;
}

template <class T>
std::string_view conv2d_backprop_input(const Conv2DGeometry& g, const T* f, const T* dy, T* dx, std::string_view path,
                                       std::string_view op) {
  const ConvSizes n = conv2d_sizes(g);
  if (n.input == 0) return kEmpty;
  if (n.output == 0 || n.filter == 0) {  // nothing flows back
    std::fill_n(dx, n.input, T(0));
    return kEmpty;
  }
  return run_path(ConvOp::BackpropInput, op, g, f, dy, dx, path);
}

template <class T>
std::string_view conv2d_backprop_filter(const Conv2DGeometry& g, const T* x, const T* dy, T* df, std::string_view path,
                                        std::string_view op) {
  const ConvSizes n = conv2d_sizes(g);
  if (n.filter == 0) return kEmpty;
  if (n.input == 0 || n.output == 0) {  // no products at all
    std::fill_n(df, n.filter, T(0));
    return kEmpty;
  }
  return run_path(ConvOp::BackpropFilter, op, g, x, dy, df, path);
}

#define DAGRAD_INSTANTIATE(T)                                                                                          \
  template std::string_view conv2d_forward<T>(const Conv2DGeometry&, const T*, const T*, T*, std::string_view,         \
                                              std::string_view);                                                       \
  template std::string_view conv2d_forward_fused<T>(const Conv2DGeometry&, const T*, const T*, const T*, bool, T*,     \
                                                    std::string_view, std::string_view);                               \
  template std::string_view conv2d_backprop_input<T>(const Conv2DGeometry&, const T*, const T*, T*, std::string_view,  \
                                                     std::string_view);                                                \
  template std::string_view conv2d_backprop_filter<T>(const Conv2DGeometry&, const T*, const T*, T*, std::string_view, \
                                                      std::string_view);
DAGRAD_INSTANTIATE(half)
DAGRAD_INSTANTIATE(bfloat16)
DAGRAD_INSTANTIATE(float)
DAGRAD_INSTANTIATE(double)
#undef DAGRAD_INSTANTIATE

}  // namespace dagrad::cpu
