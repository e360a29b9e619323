// The CPU conv paths of Conv2D, its input gradient and its filter gradient as ordered tables (in
// the spirit of oneDNN's cpu_convolution_list.cpp): a call takes the first row that applies, or
// the row forced by name; the last row of each op, generic, always applies. README.md maps them.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <type_traits>
#include <vector>

#include "dagrad/backends/cpu/conv2d/epilogue.hpp"
#include "dagrad/core/dtype.hpp"
#include "dagrad/ops/conv_geometry.hpp"

namespace dagrad::cpu {

// The three computations; V1 and V2 of each backprop op share one table.
enum class ConvOp { Forward, BackpropInput, BackpropFilter };

// How a row keeps the reference's Inf/NaN pattern where its kernels multiply an input by zeros
// standing for the padding (dispatch.cpp says which input of which path meets them). The rules
// hold for forced paths too: forcing a path chooses how a result is computed, never what it is.
enum class FiniteRule {
  None,              // meets no such zeros: skips the padding taps itself, or is the generic path
  FilterIfPadded,    // Conv2D: a padded call whose filter holds Inf or NaN runs the generic path
  FilterIfMissed,    // input gradient: so does one where some input position reaches no output
  RerunIfNonFinite,  // filter gradient, winograd: a non-finite result is computed again on the generic path
};

// A kernel on the op's two inputs in order (x, f / f, dy / x, dy), writing its output.
template <class T>
using ConvKernel = void (*)(const ops::Conv2DGeometry&, const T*, const T*, T*);
// Conv2D with _FusedConv2D's epilogue (epilogue.hpp): false where some output was not finite
// before it, for rows whose finite rule recomputes such results.
template <class T>
using FusedKernel = bool (*)(const ops::Conv2DGeometry&, const T*, const T*, T*, const ConvEpilogue&);
using FusedConvKernel = FusedKernel<float>;

struct ConvPath {
  std::string_view name;
  bool (*applies)(const ops::Conv2DGeometry&);  // shapes, attributes and CPU features
  FiniteRule finite = FiniteRule::None;
  // The dtypes the path claims: a kernel for each, null for the others.
  ConvKernel<half> half_kernel = nullptr;
  ConvKernel<bfloat16> bfloat16_kernel = nullptr;
  ConvKernel<float> float_kernel = nullptr;
  ConvKernel<double> double_kernel = nullptr;
  // Whether a call that forces no path may take the row (null: always); forcing it by name still can.
  bool (*by_default)() = nullptr;
  // Conv2D rows only: the epilogue in the kernel (null: the kernel, then a pass).
  FusedConvKernel fused_float_kernel = nullptr;
  FusedKernel<bfloat16> fused_bfloat16_kernel = nullptr;

  template <class T>
  FusedKernel<T> fused_kernel() const {
    if constexpr (std::is_same_v<T, float>)
      return fused_float_kernel;
    else if constexpr (std::is_same_v<T, bfloat16>)
      return fused_bfloat16_kernel;
    else
      return nullptr;
  }

  template <class T>
  ConvKernel<T> kernel() const {
    if constexpr (std::is_same_v<T, half>)
      return half_kernel;
    else if constexpr (std::is_same_v<T, bfloat16>)
      return bfloat16_kernel;
    else if constexpr (std::is_same_v<T, float>)
      return float_kernel;
    else
      return double_kernel;
  }
  bool claims(DType dtype) const;
  bool applies_to(const ops::Conv2DGeometry& g, DType dtype) const { return claims(dtype) && applies(g); }
};

// Element counts of a call's input, filter and output: 0 where a dim is 0 (a huge dim beside a
// zero one is a legal empty tensor), else the checked product (the tensor exists, so it fits).
struct ConvSizes {
  std::int64_t input, filter, output;
};
ConvSizes conv2d_sizes(const ops::Conv2DGeometry& g);

// The rows of an op in dispatch order; the last is the generic path.
std::span<const ConvPath> conv2d_path_table(ConvOp op);
// The computation of a conv op's name (Conv2D, Conv2DBackpropInput(V2), Conv2DBackpropFilter(V2)).
std::optional<ConvOp> conv2d_path_op(std::string_view op);

// The row a call takes: the first that applies where `forced` is empty, else the row of that
// name; InvalidArgument naming `op` (the op's name), the path and the paths that apply where it is
// unknown or does not apply.
const ConvPath& conv2d_choose_path(ConvOp computation, std::string_view op, const ops::Conv2DGeometry& g, DType dtype,
                                   std::string_view forced);

// For tools and tests: the path names of an op in table order (empty for an op without a table),
// and those that apply to a call of it.
std::vector<std::string_view> conv2d_paths(std::string_view op);
std::vector<std::string_view> conv2d_paths(std::string_view op, const ops::Conv2DGeometry& g, DType dtype);

}  // namespace dagrad::cpu
