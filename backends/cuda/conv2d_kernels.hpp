// Shared by the conv kernel registrations and the cuDNN path: geometry of a kernel call, the
// GEMM description, dagrad's own conv and (with cuDNN) the cuDNN conv.
#pragma once

#include "dagrad/backends/cuda/conv_index.hpp"
#include "dagrad/core/kernel_registry.hpp"
#include "dagrad/ops/conv_geometry.hpp"

namespace dagrad::cuda {

// The GEMM description of a conv op with geometry `g` (host code; the tests use it too).
inline ConvGemm make_conv_gemm(ConvKind kind, const ops::Conv2DGeometry& g) {
  ConvGemm p;
  p.kind = kind;
  p.nchw = g.data_format == ops::DataFormat::NCHW;
  p.batch = g.batch, p.in_rows = g.in_rows, p.in_cols = g.in_cols, p.in_depth = g.in_depth;
  p.filter_rows = g.filter_rows, p.filter_cols = g.filter_cols, p.group_in = g.filter_in_depth;
  p.out_depth = g.out_depth, p.groups = g.groups, p.group_out = g.out_depth_per_group();
  p.out_rows = g.out_rows, p.out_cols = g.out_cols;
  p.stride_rows = g.stride_rows, p.stride_cols = g.stride_cols;
  p.dilation_rows = g.dilation_rows, p.dilation_cols = g.dilation_cols;
  p.pad_top = g.pad_top, p.pad_left = g.pad_left;
  finish_conv_gemm(&p);
  return p;
}
// dagrad's implicit-GEMM kernel.
void run_own_conv(KernelContext& c, ConvKind kind);
#ifdef DAGRAD_WITH_CUDNN
// cuDNN with a deterministic algorithm; false (nothing done) where cuDNN cannot: asymmetric
// padding, sizes beyond int, or no deterministic algorithm for the case.
bool run_cudnn_conv(KernelContext& c, ConvKind kind);
#endif

}  // namespace dagrad::cuda
