// The float32 NCHW fast paths of Conv2D and its input gradient (any stride, dilation, padding and
// groups, depthwise included; the filter gradient runs on the NHWC kernels, conv2d_kernels.hpp):
// direct convolutions vectorised along the contiguous column axis on the micro-kernels of
// nchw_microkernels.hpp, reading per-task panels (conv2d_nchw_panel.hpp), no whole-tensor
// transposes and no im2col. Workspace: the filter repacked once per call, per-thread panels of a
// few rows (bounded by the constants in the .cpp files); results do not depend on the thread
// count. Filter layout HWIO as everywhere. Inputs that meet the zero padding must be
// finite (conv2d_dispatch.cpp routes the others to the generic path).
#pragma once

#include "dagrad/ops/conv_geometry.hpp"

namespace dagrad::cpu {

// NCHW and no empty dimension (the generic path handles those).
bool conv2d_nchw_fast_path_applies(const ops::Conv2DGeometry& g);
void conv2d_forward_fast_nchw(const ops::Conv2DGeometry& g, const float* x, const float* f, float* y);
void conv2d_backprop_input_fast_nchw(const ops::Conv2DGeometry& g, const float* f, const float* dy, float* dx);

}  // namespace dagrad::cpu
