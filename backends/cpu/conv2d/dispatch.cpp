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
constexpr std::string_view kEmpty = "empty";

// _FusedConv2D's BiasAdd, then Relu where asked, on Conv2D's output.
template <class T>
struct Epilogue {
  const T* bias;
  bool relu;
};

// The epilogue as a pass over the whole output (for kernels that do not apply it as they write),
// with BiasAdd's split of the channel axis; none where there is none.
template <class T>
void add_epilogue(const Conv2DGeometry& g, T* y, const Epilogue<T>* epilogue) {
  if (epilogue == nullptr) return;
  const auto split =
      ops::split_at_channel(Shape(g.output_dims()), g.data_format == ops::DataFormat::NHWC ? "NHWC" : "NCHW");
  bias_add_relu(y, epilogue->bias, y, split, conv2d_sizes(g).output, epilogue->relu);
}

// Runs op's row for the call (a, b: the op's inputs in order; out: its output), or the generic
// path (the table's last row) where the row's FiniteRule sends the call there. Conv2D may carry an
// epilogue: the row's fused kernel applies it where the row has one (float32), else a pass after
// the kernel that ran; a fused kernel reports a non-finite result before its epilogue (Relu would
// hide a NaN), which a RerunIfNonFinite row computes again on the generic path.
template <class T>
std::string_view run_path(ConvOp op, std::string_view op_name, const Conv2DGeometry& g, const T* a, const T* b, T* out,
                          std::string_view forced, const Epilogue<T>* epilogue = nullptr) {
  const ConvPath& path =
      conv2d_choose_path(op, op_name.empty() ? kOpNames[static_cast<int>(op)] : op_name, g, dtype_of<T>, forced);
  const auto ran = [&](const ConvPath& row) {
    add_epilogue(g, out, epilogue);
    return row.name;
  };
  if constexpr (std::is_same_v<T, double>) {  // only the generic path claims float64: no rule to keep
    path.kernel<T>()(g, a, b, out);
  } else {
    const ConvPath& generic = conv2d_path_table(op).back();
    const auto run_generic = [&] {
      generic.kernel<T>()(g, a, b, out);
      return ran(generic);
    };
    const ConvSizes n = conv2d_sizes(g);
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
    const bool rerun = path.finite == FiniteRule::RerunIfNonFinite;
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, bfloat16>) {
      if (epilogue != nullptr && path.fused_kernel<T>() != nullptr) {
        // bfloat16 kernels apply it to their float32 sums, each rounded first; the bias widened.
        constexpr bool kWiden = std::is_same_v<T, bfloat16>;
        std::vector<float> wide_bias;
        const float* bias = nullptr;
        if constexpr (kWiden) {
          wide_bias.assign(epilogue->bias, epilogue->bias + g.out_depth);
          bias = wide_bias.data();
        } else {
          bias = epilogue->bias;
        }
        const bool finite = path.fused_kernel<T>()(g, a, b, out, {bias, epilogue->relu, kWiden});
        return finite || !rerun ? path.name : run_generic();
      }
    }
    path.kernel<T>()(g, a, b, out);
    const i64 out_size = op == ConvOp::Forward ? n.output : op == ConvOp::BackpropInput ? n.input : n.filter;
    if (rerun && !all_finite(out, out_size)) return run_generic();
  }
  return ran(path);
}

// Conv2D, with _FusedConv2D's epilogue or without.
template <class T>
std::string_view forward(const Conv2DGeometry& g, const T* x, const T* f, T* y, std::string_view path,
                         std::string_view op, const Epilogue<T>* epilogue) {
  const ConvSizes n = conv2d_sizes(g);
  if (n.output == 0) return kEmpty;     // before any loop: an empty output may still have a huge dimension
  if (n.input == 0 || n.filter == 0) {  // no tap reads anything
    std::fill_n(y, n.output, T(0));
    add_epilogue(g, y, epilogue);
    return kEmpty;
  }
  return run_path(ConvOp::Forward, op, g, x, f, y, path, epilogue);
}

}  // namespace

template <class T>
std::string_view conv2d_forward(const Conv2DGeometry& g, const T* x, const T* f, T* y, std::string_view path,
                                std::string_view op) {
  return forward<T>(g, x, f, y, path, op, nullptr);
}

template <class T>
std::string_view conv2d_forward_fused(const Conv2DGeometry& g, const T* x, const T* f, const T* bias, bool relu, T* y,
                                      std::string_view path, std::string_view op) {
  const Epilogue<T> epilogue{bias, relu};
  return forward(g, x, f, y, path, op, &epilogue);
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
