// Launches the conv kernels a ConvPlan names, through a `launch` callable:
//   launch(name, kernel, grid, block, args...)
// conv2d.cu passes one that uses <<<>>> on the session's stream; the tests pass cuda_sim's, so
// the kernel choice, grids and the split-K combine run on the host exactly as on a GPU.
// See conv2d_generic.cuh for why these templates live in an anonymous namespace.
#pragma once

#include "dagrad/backends/cuda/conv2d_generic.cuh"
#include "dagrad/backends/cuda/conv2d_nhwc.cuh"
#include "dagrad/backends/cuda/conv_plan.hpp"
#include "dagrad/backends/cuda/device_types.cuh"
#include "dagrad/backends/cuda/layout_transpose.cuh"

namespace dagrad::cuda {
namespace {

// One block per C tile of each group and k-split.
inline dim3 conv_grid(const ConvGemm& p, const ConvPlan& plan) {
  const TileShape t = plan.tile;
  return dim3(static_cast<unsigned>((p.m + t.bm - 1) / t.bm), static_cast<unsigned>((p.n + t.bn - 1) / t.bn),
              static_cast<unsigned>(p.groups * plan.splits));
}

// The NHWC kernels with loader `Loader<T, bm, bk, threads, chunked, a_k_major>` for plan.tile.
// plan_conv takes the large tiles for chunked loads only.
template <class T, template <class, int, int, int, bool, bool> class Loader, class Launch>
void launch_nhwc(const ConvGemm& p, const ConvPlan& plan, const T* a, const T* b, T* out, acc_t<T>* work,
                 Launch& launch) {
  const NhwcArgs args{p, plan.divisors, plan.splits};
  const TileShape t = plan.tile;
  const dim3 grid = conv_grid(p, plan), block(static_cast<unsigned>(t.threads));
  auto go = [&](auto kernel) { launch("nhwc conv kernel", kernel, grid, block, args, a, b, out, work); };
  if constexpr (is_reduced_v<T>) {
    constexpr TileShape large = kNhwcTensorLarge, small = kNhwcTensorSmall;
    if (t.bm == large.bm) {
      go(nhwc_wmma_kernel<Loader<T, large.bm, large.bk, large.threads, true, false>>);
    } else if (plan.chunked) {
      go(nhwc_wmma_kernel<Loader<T, small.bm, small.bk, small.threads, true, false>>);
    } else {
      go(nhwc_wmma_kernel<Loader<T, small.bm, small.bk, small.threads, false, false>>);
    }
  } else {
    constexpr TileShape large = kNhwcSimtLarge, small = kNhwcSimtSmall;
    if constexpr (std::is_same_v<T, float>) {
      if (t.bm == large.bm) return go(nhwc_simt_kernel<Loader<T, large.bm, large.bk, large.threads, true, true>>);
    }
    plan.chunked ? go(nhwc_simt_kernel<Loader<T, small.bm, small.bk, small.threads, true, true>>)
                 : go(nhwc_simt_kernel<Loader<T, small.bm, small.bk, small.threads, false, true>>);
  }
}

// C = A * B per group as `plan` says. With plan.splits > 1, `work` holds splits * groups * m * n
// accumulators (acc_t). Requires m, n, k > 0 and a grid the GPU accepts (conv2d_kernels.cpp).
template <class Launch>
void launch_conv_plan(ElemType type, const ConvGemm& p, const ConvPlan& plan, const void* a, const void* b, void* c,
                      void* work, Launch&& launch) {
  visit_elem(type, [&]<class T>() {
    if constexpr (is_float_v<T>) {
      const auto* a_t = static_cast<const T*>(a);
      const auto* b_t = static_cast<const T*>(b);
      auto* out = static_cast<T*>(c);
      auto* partial = static_cast<acc_t<T>*>(work);
      if (plan.variant == ConvVariant::FilterNhwc) {
        launch_nhwc<T, FilterSlabLoader>(p, plan, a_t, b_t, out, partial, launch);
      } else if (plan.variant == ConvVariant::ForwardNhwc) {
        launch_nhwc<T, ForwardSlabLoader>(p, plan, a_t, b_t, out, partial, launch);
      } else if (plan.variant == ConvVariant::InputNhwc) {
        launch_nhwc<T, InputSlabLoader>(p, plan, a_t, b_t, out, partial, launch);
      } else {
        const dim3 grid = conv_grid(p, plan), block(static_cast<unsigned>(plan.tile.threads));
        if constexpr (is_reduced_v<T>) {
          launch("conv_wmma_kernel", conv_wmma_kernel<T>, grid, block, p, a_t, b_t, out, partial, plan.splits);
        } else {
          launch("conv_simt_kernel", conv_simt_kernel<T>, grid, block, p, a_t, b_t, out, partial, plan.splits);
        }
      }
      if (plan.splits > 1) {
        const std::int64_t total = p.groups * p.m * p.n;
        launch("conv_combine_kernel", conv_combine_kernel<T>, dim3(grid_for(total, 256)), dim3(256), p,
               static_cast<const acc_t<T>*>(partial), out, plan.splits);
      }
    }
  });
}

// A run of plan_conv_run: transposes the staged operands to NHWC, runs the plan, and transposes
// a staged result back to NCHW.
template <class Launch>
void launch_conv_run(ElemType type, const ConvRun& run, const ConvBuffers& io, Launch&& launch) {
  const ConvGemm& p = run.gemm;
  const int size = element_bytes(type);
  auto to_nhwc = [](const ActivationShape& s) { return nchw_to_nhwc(s.batch, s.channels, s.pixels); };
  const void* a = io.a;
  const void* b = io.b;
  void* c = run.staged.c ? io.c_nhwc : io.c;
  if (run.staged.a) {
    launch_transpose(size, io.a, io.a_nhwc, to_nhwc(conv_a_shape(p)), launch);
    a = io.a_nhwc;
  }
  if (run.staged.b) {
    launch_transpose(size, io.b, io.b_nhwc, to_nhwc(conv_b_shape(p)), launch);
    b = io.b_nhwc;
  }
  launch_conv_plan(type, p, run.plan, a, b, c, io.work, launch);
  if (run.staged.c) {
    const ActivationShape s = conv_c_shape(p);
    launch_transpose(size, io.c_nhwc, io.c, nhwc_to_nchw(s.batch, s.channels, s.pixels), launch);
  }
}

}  // namespace
}  // namespace dagrad::cuda
