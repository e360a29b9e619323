// Which CUDA conv kernel runs a ConvGemm, with which tile and how many k-splits (host code, pure
// functions of the shape and the SM count, so a given GPU always sums in the same order).
//
// - Generic: any conv op, layout and size; every operand element is gathered through
//   conv_index.hpp's offset functions.
// - FilterNhwc (filter gradient), ForwardNhwc (Conv2D) and InputNhwc (input gradient), on NHWC
//   operands (NCHW ones are copied to NHWC first, plan_conv_run): C is a plain row-major
//   matrix there and B nearly so; each thread decodes its fixed indices once and the moving ones with
//   FastDivmod, operands move in 16-byte chunks when the group's channel counts allow, and the
//   next k-slab is loaded while the current one is multiplied (conv2d_nhwc.cuh).
#pragma once

#include <algorithm>
#include <cstdint>

#include "dagrad/backends/cuda/conv_index.hpp"
#include "dagrad/backends/cuda/fast_divmod.hpp"
#include "dagrad/backends/cuda/launch.hpp"

namespace dagrad::cuda {

enum class ConvVariant : int { Generic, FilterNhwc, ForwardNhwc, InputNhwc };

// The NHWC kernels' tiles: square bm = bn tiles, `threads` threads staging bk-deep slabs.
inline constexpr TileShape kNhwcTensorLarge{128, 128, 32, 256};  // 8 warps of 64 x 32 (wmma)
inline constexpr TileShape kNhwcTensorSmall{64, 64, 32, 128};    // 4 warps of 32 x 32
inline constexpr TileShape kNhwcSimtLarge{128, 128, 8, 256};     // 8 x 8 results per thread
inline constexpr TileShape kNhwcSimtSmall{64, 64, 16, 256};      // 4 x 4 results per thread

// The NHWC kernels' divisors, fixed for a launch.
struct NhwcDivisors {
  FastDivmod out_cols, out_rows;                   // FilterNhwc: pixel index -> (image, row, column)
  FastDivmod group_in, filter_cols;                // ForwardNhwc: k -> (tap, channel), tap -> (kh, kw)
  FastDivmod group_out, stride_rows, stride_cols;  // InputNhwc: k -> (tap, channel), offset -> output index
};

struct ConvPlan {
  ConvVariant variant = ConvVariant::Generic;
  TileShape tile = kSimtTile;
  int splits = 1;
  bool chunked = false;  // NHWC kernels: group_in and group_out are multiples of the 16-byte chunk
  NhwcDivisors divisors;
};

inline int element_bytes(ElemType type) {
  switch (type) {
    case ElemType::Half:
    case ElemType::BFloat16:
      return 2;
    case ElemType::Float64:
    case ElemType::Int64:
      return 8;
    case ElemType::Bool:
      return 1;
    default:
      return 4;
  }
}

// Bytes per element of the split-K partials (acc_t: float, or double for float64).
inline std::int64_t conv_accumulator_bytes(ElemType type) { return type == ElemType::Float64 ? 8 : 4; }

inline bool uses_tensor_cores(ElemType type) { return type == ElemType::Half || type == ElemType::BFloat16; }

// The NHWC kernels decode the moving index (pixels for the filter gradient, k for Conv2D) with
// FastDivmod, so it must stay below 2^31; the grid must hold the per-group sizes.
inline ConvVariant nhwc_variant(const ConvGemm& p) {
  constexpr std::int64_t kMaxIndex = (std::int64_t{1} << 31) - 1;
  if (p.nchw) return ConvVariant::Generic;
  if (p.kind == ConvKind::BackpropFilter && p.k <= kMaxIndex && p.out_rows <= kMaxIndex && p.out_cols <= kMaxIndex) {
    return ConvVariant::FilterNhwc;
  }
  if (p.kind == ConvKind::Forward && p.k <= kMaxIndex) return ConvVariant::ForwardNhwc;
  // The input gradient also divides window offsets (up to size + padding) by the strides.
  if (p.kind == ConvKind::BackpropInput && p.k <= kMaxIndex && p.in_rows + p.pad_top <= kMaxIndex &&
      p.in_cols + p.pad_left <= kMaxIndex && p.stride_rows <= kMaxIndex && p.stride_cols <= kMaxIndex) {
    return ConvVariant::InputNhwc;
  }
  return ConvVariant::Generic;
}

// `aligned`: both operands start on a 16-byte boundary (device allocations always do).
inline ConvPlan plan_conv(ElemType type, const ConvGemm& p, int sm_count, bool aligned = true) {
  ConvPlan plan;
  const bool tensor = uses_tensor_cores(type);
  plan.variant = nhwc_variant(p);
  if (plan.variant != ConvVariant::Generic) {
    const std::int64_t chunk = 16 / element_bytes(type);
    plan.chunked = aligned && p.group_in % chunk == 0 && p.group_out % chunk == 0;
    // Large tiles only where both sides fill most of them, and never for double (8 x 8 double
    // accumulators would not fit the registers) or element-wise loads (their per-element
    // decodes would spill).
    const bool large = p.m >= 96 && p.n >= 96 && type != ElemType::Float64 && plan.chunked;
    plan.tile = tensor ? (large ? kNhwcTensorLarge : kNhwcTensorSmall) : (large ? kNhwcSimtLarge : kNhwcSimtSmall);
    auto divisor = [](std::int64_t d) {
      return make_fast_divmod(static_cast<std::uint32_t>(std::max<std::int64_t>(d, 1)));
    };
    plan.divisors = {divisor(p.out_cols),  divisor(p.out_rows),    divisor(p.group_in),   divisor(p.filter_cols),
                     divisor(p.group_out), divisor(p.stride_rows), divisor(p.stride_cols)};
  } else {
    plan.tile = tensor ? kTensorTile : kSimtTile;
  }
  const std::int64_t tiles =
      ((p.m + plan.tile.bm - 1) / plan.tile.bm) * ((p.n + plan.tile.bn - 1) / plan.tile.bn) * p.groups;
  plan.splits = choose_splits(tiles, p.k, plan.tile.bk, sm_count);
  // The grid's z holds groups * splits, at most 65535.
  plan.splits = static_cast<int>(std::min<std::int64_t>(plan.splits, std::max<std::int64_t>(1, 65535 / p.groups)));
  return plan;
}

// Whether the grid of `plan` is one a GPU accepts (its y and z are at most 65535).
inline bool conv_grid_fits(const ConvGemm& p, const ConvPlan& plan) {
  return (p.n + plan.tile.bn - 1) / plan.tile.bn <= 65535 && p.groups * plan.splits <= 65535;
}

// An NCHW conv runs on NHWC copies where an NHWC kernel can take it: the activations it reads
// are transposed to NHWC first, and an activation result is transposed back (conv2d_launch.cuh).
// The transposes cost two memory passes; the generic kernel's NCHW gathers cost far more.
struct NhwcStaging {
  bool a = false, b = false, c = false;  // which of A, B and C are NHWC copies
};

struct ConvRun {
  ConvGemm gemm;  // as the kernels see it: NHWC where staged
  ConvPlan plan;
  NhwcStaging staged;
};

// `a_aligned`, `b_aligned`: the operands start on a 16-byte boundary (copies always do).
inline ConvRun plan_conv_run(ElemType type, const ConvGemm& p, int sm_count, bool a_aligned = true,
                             bool b_aligned = true) {
  ConvRun run{p, {}, {}};
  if (p.nchw) {
    ConvGemm nhwc = p;
    nhwc.nchw = false;
    finish_conv_gemm(&nhwc);
    if (nhwc_variant(nhwc) != ConvVariant::Generic) {
      const bool filter = p.kind == ConvKind::BackpropFilter;
      run.gemm = nhwc;
      run.staged = {true, filter, !filter};
    }
  }
  run.plan = plan_conv(type, run.gemm, sm_count, (a_aligned || run.staged.a) && (b_aligned || run.staged.b));
  return run;
}

// Bytes of the scratch buffers a run needs: its NHWC copies and its split-K partials.
struct ConvScratchBytes {
  std::int64_t a = 0, b = 0, c = 0, work = 0;
};

// The operands in the op's layout, and scratch buffers of conv_scratch_bytes (null where 0).
struct ConvBuffers {
  const void* a = nullptr;
  const void* b = nullptr;
  void* c = nullptr;
  void* a_nhwc = nullptr;
  void* b_nhwc = nullptr;
  void* c_nhwc = nullptr;
  void* work = nullptr;
};

// An activation (x or dy/y) as its NHWC copy sees it: `batch` images of channels x pixels.
struct ActivationShape {
  std::int64_t batch = 0, channels = 0, pixels = 0;
  std::int64_t elements() const { return batch * channels * pixels; }
};
inline ActivationShape conv_x_shape(const ConvGemm& p) { return {p.batch, p.in_depth, p.in_rows * p.in_cols}; }
inline ActivationShape conv_y_shape(const ConvGemm& p) { return {p.batch, p.out_depth, p.out_rows * p.out_cols}; }
// What A, B and C hold where they are staged: A is x, or dy for the input gradient; B is dy (the
// filter gradient's); C is y (Conv2D) or dx (the input gradient).
inline ActivationShape conv_a_shape(const ConvGemm& p) {
  return p.kind == ConvKind::BackpropInput ? conv_y_shape(p) : conv_x_shape(p);
}
inline ActivationShape conv_b_shape(const ConvGemm& p) { return conv_y_shape(p); }
inline ActivationShape conv_c_shape(const ConvGemm& p) {
  return p.kind == ConvKind::Forward ? conv_y_shape(p) : conv_x_shape(p);
}

// The sizes are of tensors that exist, and splits stay below 65535, so they cannot overflow.
inline ConvScratchBytes conv_scratch_bytes(ElemType type, const ConvRun& run) {
  const ConvGemm& p = run.gemm;
  const std::int64_t size = element_bytes(type);
  ConvScratchBytes bytes;
  if (run.staged.a) bytes.a = size * conv_a_shape(p).elements();
  if (run.staged.b) bytes.b = size * conv_b_shape(p).elements();
  if (run.staged.c) bytes.c = size * conv_c_shape(p).elements();
  if (run.plan.splits > 1) bytes.work = run.plan.splits * p.groups * p.m * p.n * conv_accumulator_bytes(type);
  return bytes;
}

}  // namespace dagrad::cuda
