// The three path tables (rows in dispatch order, reproducing the former if-chain exactly), what
// makes each row apply, and the choice of a row for a call, forced by name or not.
#include "dagrad/backends/cpu/conv2d/paths.hpp"

#include <algorithm>
#include <initializer_list>
#include <string>

#include "dagrad/backends/cpu/conv2d/kernels.hpp"
#include "dagrad/backends/cpu/float_buffer.hpp"
#include "dagrad/core/checked.hpp"
#include "dagrad/core/error.hpp"
#include "dagrad/core/kernel_registry.hpp"

namespace dagrad::cpu {
namespace {

using ops::Conv2DGeometry;
using i64 = std::int64_t;

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

// What each row's applies() tests: every fast row first needs fast_paths_bounded (the input
// gradient scans input positions, the other two output positions).
template <ConvOp op>
bool bounded(const Conv2DGeometry& g) {
  return fast_paths_bounded(g, op == ConvOp::BackpropInput);
}
template <ConvOp op>
bool depthwise_row(const Conv2DGeometry& g) {
  return bounded<op>(g) && conv2d_depthwise_applies(g);
}
// The side the bfloat16 rows must be wide in: channels, and for the input gradient also filters
// (its reduction).
template <ConvOp op>
i64 bf16_short_side(const Conv2DGeometry& g) {
  return op == ConvOp::BackpropInput ? std::min(g.out_depth, g.in_depth) : g.in_depth;
}
template <ConvOp op>
bool bf16_native_row(const Conv2DGeometry& g) {
  return bounded<op>(g) && bf16_native_applies(g, bf16_short_side<op>(g));
}
// AMX tiles: NHWC, groups = 1, a short side of at least 16 (the filter gradient's tile rows, half of
// Conv2D's tile step; below that the other paths waste less), where the CPU has AMX-BF16 and the OS
// granted tile data.
template <ConvOp op>
bool amx_row(const Conv2DGeometry& g) {
  return bounded<op>(g) && conv2d_fast_path_applies(g) && g.groups == 1 && bf16_short_side<op>(g) >= 16 &&
         conv2d_amx_available();
}
template <ConvOp op>
bool nhwc_fast_row(const Conv2DGeometry& g) {
  return bounded<op>(g) && conv2d_fast_path_applies(g);
}
template <ConvOp op>
bool nchw_fast_row(const Conv2DGeometry& g) {
  return bounded<op>(g) && conv2d_nchw_fast_path_applies(g);
}
bool forward_strips_row(const Conv2DGeometry& g) {
  return bounded<ConvOp::Forward>(g) && conv2d_forward_strips_apply(g);
}
// The GEMM computes every tap of every output pixel, as Conv2D's paths do.
bool input_col2im_row(const Conv2DGeometry& g) { return bounded<ConvOp::Forward>(g) && conv2d_input_col2im_applies(g); }
bool forward_im2col_nchw_row(const Conv2DGeometry& g) {
  return bounded<ConvOp::Forward>(g) && conv2d_forward_im2col_nchw_applies(g);
}
bool input_col2im_nchw_row(const Conv2DGeometry& g) {
  return bounded<ConvOp::Forward>(g) && conv2d_input_col2im_nchw_applies(g);
}
bool filter_strips_row(const Conv2DGeometry& g) {
  return bounded<ConvOp::BackpropFilter>(g) && conv2d_filter_strips_apply(g);
}
// The NHWC filter gradient takes any groups.
bool filter_nhwc_row(const Conv2DGeometry& g) {
  return bounded<ConvOp::BackpropFilter>(g) && g.data_format == ops::DataFormat::NHWC;
}
// NCHW on the NHWC rows: worth its transposes only where the first NHWC row that takes the same
// call in NHWC is a fast one (the rows' applies() ignore dtypes; the dtype-only rows, amx and
// bf16_native, need what nhwc_fast needs), and not col2im: on first layers (C of 1 to 3) nchw_fast
// ran the input gradient in 0.6 and 30 ms where col2im took 1.1 and 36 ms in NHWC (Zen 5, one thread,
// 32x28x28x1 3x3 -> 32 and 8x224x224x3 7x7/2 -> 64), before the transposes.
template <ConvOp op>
bool nchw_slabs_row(const Conv2DGeometry& g) {
  if (!conv2d_nchw_slabs_apply(g)) return false;
  Conv2DGeometry nhwc = g;
  nhwc.data_format = ops::DataFormat::NHWC;
  const std::span<const ConvPath> rows = conv2d_path_table(op);
  const auto first = std::find_if(rows.begin(), rows.end() - 1, [&](const ConvPath& row) { return row.applies(nhwc); });
  return first != rows.end() - 1 && first->name != "col2im";
}
template <ConvOp op>
bool winograd_applies(const Conv2DGeometry& g) {
  return bounded<op>(g) && conv2d_winograd_applies(g);
}
bool always(const Conv2DGeometry&) { return true; }

// A float32 kernel of op run on T inputs a, b: in place for float32, else widened (workspace: the
// two inputs and the output in float32).
using FloatKernel = ConvKernel<float>;
template <ConvOp op, FloatKernel fast, class T>
void widened(const Conv2DGeometry& g, const T* a, const T* b, T* out) {
  if constexpr (std::is_same_v<T, float>) {
    fast(g, a, b, out);
  } else {
    const ConvSizes n = conv2d_sizes(g);
    const i64 na = op == ConvOp::BackpropInput ? n.filter : n.input;
    const i64 nb = op == ConvOp::Forward ? n.filter : n.output;
    FloatBuffer result(op == ConvOp::Forward ? n.output : op == ConvOp::BackpropInput ? n.input : n.filter);
    fast(g, to_float(a, na).data(), to_float(b, nb).data(), result.data());
    from_float(result, out);
  }
}

// The fused float32 kernel on bfloat16 inputs, widened as above (the epilogue rounds each sum to
// bfloat16 first: epilogue.hpp).
template <FusedConvKernel fused>
bool widened_fused(const Conv2DGeometry& g, const bfloat16* x, const bfloat16* f, bfloat16* y,
                   const ConvEpilogue& epilogue) {
  const ConvSizes n = conv2d_sizes(g);
  FloatBuffer result(n.output);
  const bool finite = fused(g, to_float(x, n.input).data(), to_float(f, n.filter).data(), result.data(), epilogue);
  from_float(result, y);
  return finite;
}

// A row on a float32 kernel, claiming half, bfloat16 (widened) and float32.
template <ConvOp op, FloatKernel fast>
constexpr ConvPath float_row(std::string_view name, bool (*applies)(const Conv2DGeometry&), FiniteRule finite) {
  return {name, applies, finite, widened<op, fast, half>, widened<op, fast, bfloat16>, fast, nullptr};
}

// Winograd's tiles, which DAGRAD_CONV_WINOGRAD=0 takes out of the default choice. The row comes
// before bf16_native: widened, on a Zen 4 (AVX512-BF16), it ran bfloat16 1.0-1.6x as fast as
// the native pairs (train_cnn's 5x5 layer: Conv2D 1.9 against 2.9 ms, input gradient 1.9 against
// 3.0, filter gradient 3.2 against 4.0; 3x3 layers of 64 to 256 channels 1.0-1.5x).
template <ConvOp op, FloatKernel fast, FusedConvKernel fused = nullptr>
constexpr ConvPath winograd_row() {
  ConvPath row = float_row<op, fast>("winograd", winograd_applies<op>, FiniteRule::RerunIfNonFinite);
  row.by_default = conv2d_winograd_by_default;
  if constexpr (fused != nullptr) {
    row.fused_float_kernel = fused;
    row.fused_bfloat16_kernel = widened_fused<fused>;
  }
  return row;
}

// A row on a float32 kernel that claims half (widened) and float32, leaving bfloat16 to a later
// row with native bfloat16 kernels.
template <ConvOp op, FloatKernel fast>
constexpr ConvPath half_float_row(std::string_view name, bool (*applies)(const Conv2DGeometry&), FiniteRule finite) {
  return {name, applies, finite, widened<op, fast, half>, nullptr, fast, nullptr};
}

// The NCHW pointwise GEMM claims half and float32, not bfloat16: widened, it ran the 1x1 64 -> 256
// layer of the bench at 20-26 ms where nchw_slabs on the native bfloat16 kernels took 11-15 (Zen 5).
// The filter gradient's sums run over the batch in chunks: its non-finite results are recomputed.
template <ConvOp op, FloatKernel fast>
constexpr ConvPath pointwise_row() {
  constexpr bool filter = op == ConvOp::BackpropFilter;
  return half_float_row<op, fast>("nchw_pointwise",
                                  filter ? conv2d_filter_nchw_pointwise_applies : conv2d_nchw_pointwise_applies,
                                  filter ? FiniteRule::RerunIfNonFinite : FiniteRule::None);
}

constexpr ConvOp kF = ConvOp::Forward, kI = ConvOp::BackpropInput, kW = ConvOp::BackpropFilter;

constexpr ConvPath kForward[] = {
    float_row<kF, conv2d_forward_depthwise>("depthwise", depthwise_row<kF>, FiniteRule::None),
    {"amx", amx_row<kF>, FiniteRule::FilterIfPadded, nullptr, conv2d_forward_amx},
    // Before bfloat16's native rows: widened, its fewer products beat vdpbf16ps's pairs (winograd_row).
    winograd_row<kF, conv2d_forward_winograd, conv2d_forward_winograd_fused>(),
    {"bf16_native", bf16_native_row<kF>, FiniteRule::FilterIfPadded, nullptr, conv2d_forward_bf16},
    // First layers. half and bfloat16: x widened once, y narrowed row by row (no float32 copy of y).
    {"strips", forward_strips_row, FiniteRule::FilterIfPadded, conv2d_forward_strips<half>,
     conv2d_forward_strips<bfloat16>, conv2d_forward_strips<float>, nullptr, nullptr,
     conv2d_forward_strips_fused<float>, conv2d_forward_strips_fused<bfloat16>},
    float_row<kF, conv2d_forward_fast>("nhwc_fast", nhwc_fast_row<kF>, FiniteRule::FilterIfPadded),
    // NCHW. Pointwise: no padding, and its column tails run single floats: no finite rule.
    pointwise_row<kF, conv2d_forward_nchw_pointwise>(),
    // NCHW first layers: y written in place, where nchw_slabs transposed it (forward_im2col_nchw.cpp).
    // Not bfloat16: widened, the 5x5 1 -> 32 layer took 0.72 ms where nchw_slabs' native strips
    // took 0.62 (Zen 4).
    half_float_row<kF, conv2d_forward_im2col_nchw>("nchw_im2col", forward_im2col_nchw_row, FiniteRule::FilterIfPadded),
    // Through the NHWC rows in the call's dtype, whose own finite rules then hold.
    {"nchw_slabs", nchw_slabs_row<kF>, FiniteRule::None, conv2d_forward_nchw_slabs<half>,
     conv2d_forward_nchw_slabs<bfloat16>, conv2d_forward_nchw_slabs<float>},
    float_row<kF, conv2d_forward_fast_nchw>("nchw_fast", nchw_fast_row<kF>, FiniteRule::FilterIfPadded),
    {"generic", always, FiniteRule::None, conv2d_forward_generic<half>, conv2d_forward_generic<bfloat16>,
     conv2d_forward_generic<float>, conv2d_forward_generic<double>},
};
constexpr ConvPath kBackpropInput[] = {
    float_row<kI, conv2d_backprop_input_depthwise>("depthwise", depthwise_row<kI>, FiniteRule::None),
    {"amx", amx_row<kI>, FiniteRule::FilterIfMissed, nullptr, conv2d_backprop_input_amx},
    winograd_row<kI, conv2d_backprop_input_winograd>(),
    {"bf16_native", bf16_native_row<kI>, FiniteRule::FilterIfMissed, nullptr, conv2d_backprop_input_bf16},
    // First layers; only real terms are added, so no finite rule.
    float_row<kI, conv2d_backprop_input_col2im>("col2im", input_col2im_row, FiniteRule::None),
    float_row<kI, conv2d_backprop_input_fast>("nhwc_fast", nhwc_fast_row<kI>, FiniteRule::FilterIfMissed),
    pointwise_row<kI, conv2d_backprop_input_nchw_pointwise>(),
    // NCHW first layers: ran 2x and more as fast as nchw_fast and nchw_slabs (input_col2im.cpp).
    float_row<kI, conv2d_backprop_input_col2im_nchw>("nchw_col2im", input_col2im_nchw_row, FiniteRule::None),
    {"nchw_slabs", nchw_slabs_row<kI>, FiniteRule::None, conv2d_backprop_input_nchw_slabs<half>,
     conv2d_backprop_input_nchw_slabs<bfloat16>, conv2d_backprop_input_nchw_slabs<float>},
    float_row<kI, conv2d_backprop_input_fast_nchw>("nchw_fast", nchw_fast_row<kI>, FiniteRule::FilterIfMissed),
    {"generic", always, FiniteRule::None, conv2d_backprop_input_generic<half>, conv2d_backprop_input_generic<bfloat16>,
     conv2d_backprop_input_generic<float>, conv2d_backprop_input_generic<double>},
};
constexpr ConvPath kBackpropFilter[] = {
    float_row<kW, conv2d_backprop_filter_depthwise>("depthwise", depthwise_row<kW>, FiniteRule::None),
    {"amx", amx_row<kW>, FiniteRule::RerunIfNonFinite, nullptr, conv2d_backprop_filter_amx},
    // NCHW 1x1: before strips, which transposes all of dy.
    pointwise_row<kW, conv2d_backprop_filter_nchw_pointwise>(),
    // First layers. half and bfloat16 widen block by block as they copy: no whole-tensor copies.
    {"strips", filter_strips_row, FiniteRule::RerunIfNonFinite, conv2d_backprop_filter_strips<half>,
     conv2d_backprop_filter_strips<bfloat16>, conv2d_backprop_filter_strips<float>},
    winograd_row<kW, conv2d_backprop_filter_winograd>(),
    {"bf16_native", bf16_native_row<kW>, FiniteRule::RerunIfNonFinite, nullptr, conv2d_backprop_filter_bf16},
    float_row<kW, conv2d_backprop_filter_fast>("nhwc_fast", filter_nhwc_row, FiniteRule::RerunIfNonFinite),
    // NCHW on the NHWC rows; bfloat16 in one slab of the whole batch, on its native kernels.
    {"nchw_slabs", nchw_slabs_row<kW>, FiniteRule::RerunIfNonFinite,
     widened<kW, conv2d_backprop_filter_nchw_slabs, half>, conv2d_backprop_filter_nchw_whole,
     conv2d_backprop_filter_nchw_slabs},
    {"generic", always, FiniteRule::None, conv2d_backprop_filter_generic<half>,
     conv2d_backprop_filter_generic<bfloat16>, conv2d_backprop_filter_generic<float>,
     conv2d_backprop_filter_generic<double>},
};

i64 element_count(std::initializer_list<i64> dims) {
  for (const i64 d : dims)
    if (d == 0) return 0;
  return checked_product(dims, "Conv2D: tensor elements");
}

std::string joined(const std::vector<std::string_view>& names) {
  std::string out;
  for (const auto name : names) out += (out.empty() ? "" : ", ") + std::string(name);
  return out;
}

// "float NHWC, input [1,5,5,3], filter [3,3,3,8], groups 1": enough to see why a path does not apply.
std::string describe(const Conv2DGeometry& g, DType dtype) {
  const bool nhwc = g.data_format == ops::DataFormat::NHWC;
  const Shape input =
      nhwc ? Shape{g.batch, g.in_rows, g.in_cols, g.in_depth} : Shape{g.batch, g.in_depth, g.in_rows, g.in_cols};
  return str_cat(dtype_name(dtype), nhwc ? " NHWC" : " NCHW", ", input ", input.to_string(), ", filter ",
                 Shape{g.filter_rows, g.filter_cols, g.filter_in_depth, g.out_depth}.to_string(), ", groups ",
                 g.groups);
}

}  // namespace

bool ConvPath::claims(DType dtype) const {
  switch (dtype) {
    case DType::Half:
      return half_kernel != nullptr;
    case DType::BFloat16:
      return bfloat16_kernel != nullptr;
    case DType::Float32:
      return float_kernel != nullptr;
    case DType::Float64:
      return double_kernel != nullptr;
    default:
      return false;
  }
}

ConvSizes conv2d_sizes(const Conv2DGeometry& g) {
  return {element_count({g.batch, g.in_rows, g.in_cols, g.in_depth}),
          element_count({g.filter_rows, g.filter_cols, g.filter_in_depth, g.out_depth}),
          element_count({g.batch, g.out_rows, g.out_cols, g.out_depth})};
}

std::span<const ConvPath> conv2d_path_table(ConvOp op) {
  switch (op) {
    case ConvOp::Forward:
      return kForward;
    case ConvOp::BackpropInput:
      return kBackpropInput;
    case ConvOp::BackpropFilter:
      break;
  }
  return kBackpropFilter;
}

std::optional<ConvOp> conv2d_path_op(std::string_view op) {
  if (op == "Conv2D" || op == "_FusedConv2D") return ConvOp::Forward;
  if (op == "Conv2DBackpropInput" || op == "Conv2DBackpropInputV2") return ConvOp::BackpropInput;
  if (op == "Conv2DBackpropFilter" || op == "Conv2DBackpropFilterV2") return ConvOp::BackpropFilter;
  return std::nullopt;
}

const ConvPath& conv2d_choose_path(ConvOp computation, std::string_view op, const Conv2DGeometry& g, DType dtype,
                                   std::string_view forced) {
  const auto table = conv2d_path_table(computation);
  if (forced.empty()) {
    for (const ConvPath& path : table)
      if (path.applies_to(g, dtype) && (path.by_default == nullptr || path.by_default())) return path;
    return table.back();  // unreachable: generic claims every float dtype
  }
  const auto it = std::find_if(table.begin(), table.end(), [&](const ConvPath& p) { return p.name == forced; });
  if (it == table.end()) {
    std::vector<std::string_view> names;
    for (const ConvPath& path : table) names.push_back(path.name);
    invalid_argument(op, ": unknown kernel path '", forced, "'; the paths of ", op, " are ", joined(names));
  }
  if (!it->applies_to(g, dtype)) {
    std::vector<std::string_view> names;
    for (const ConvPath& path : table)
      if (path.applies_to(g, dtype)) names.push_back(path.name);
    invalid_argument(op, ": kernel path '", forced, "' ", kPathDoesNotApply, " (", describe(g, dtype),
                     "); the paths that apply: ", joined(names));
  }
  return *it;
}

std::vector<std::string_view> conv2d_paths(std::string_view op) {
  std::vector<std::string_view> names;
  if (const auto computation = conv2d_path_op(op))
    for (const ConvPath& path : conv2d_path_table(*computation)) names.push_back(path.name);
  return names;
}

std::vector<std::string_view> conv2d_paths(std::string_view op, const Conv2DGeometry& g, DType dtype) {
  std::vector<std::string_view> names;
  if (const auto computation = conv2d_path_op(op))
    for (const ConvPath& path : conv2d_path_table(*computation))
      if (path.applies_to(g, dtype)) names.push_back(path.name);
  return names;
}

}  // namespace dagrad::cpu
