// CUDA kernels of Conv2D, Conv2DBackpropInput(V2) and Conv2DBackpropFilter(V2): dagrad's own
// implicit GEMM ("cuda"), and the "cudnn" kernels that use cuDNN when use_cudnn_on_gpu is true.
#include "dagrad/backends/cuda/conv2d_kernels.hpp"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "dagrad/backends/cuda/conv_launch.hpp"
#include "dagrad/backends/cuda/glue.hpp"
#include "dagrad/backends/cuda/launch_ops.hpp"
#include "dagrad/ops/fused_conv2d.hpp"
#include "dagrad/ops/nn_ops.hpp"

namespace dagrad::cuda {
namespace {

int sm_count(int device) {
  int count = 0;
  check_cuda(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device), "cudaDeviceGetAttribute");
  return std::max(count, 1);
}

bool aligned_16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

// _FusedConv2D after its conv: BiasAdd's and Relu's kernels in place on the output, so the fused
// op gives the chain's bits.
void fused_conv2d_epilogue(KernelContext& c) {
  Launch launch(c);
  Tensor& out = c.outputs().at(0);
  if (out.num_elements() == 0) return;
  const ElemType type = elem(out.dtype());
  const ops::ChannelSplit s = ops::split_at_channel(out.shape(), c.attr<std::string>("data_format"));
  launch_bias_add(type, out.raw_data(), c.input(2).raw_data(), out.raw_data(), out.num_elements(), s.channels, s.inner,
                  launch.stream);
  if (ops::fused_conv2d_relu(c.attrs())) {
    launch_relu(type, out.raw_data(), out.raw_data(), out.num_elements(), launch.stream);
  }
}

}  // namespace

void run_own_conv(KernelContext& c, ConvKind kind) {
  Launch launch(c);
  const ConvGemm p = make_conv_gemm(kind, ops::conv2d_geometry(c));
  Tensor& out = c.allocate_output(0);
  const ElemType type = elem(out.dtype());
  if (out.num_elements() == 0) return;
  if (p.k == 0) {  // nothing to sum: the result is zero (e.g. an empty batch for the filter grad)
    launch_fill(type, out.raw_data(), out.num_elements(), 0.0, launch.stream);
    return;
  }
  // Operands: A and B per conv_index.hpp; the backprop ops' sizes/shape input (1 or 0) is unused.
  const Tensor& a = kind == ConvKind::BackpropInput ? c.input(2) : c.input(0);
  const Tensor& b = kind == ConvKind::BackpropFilter ? c.input(2) : c.input(1);
  const ConvRun run =
      plan_conv_run(type, p, sm_count(c.device().index), aligned_16(a.raw_data()), aligned_16(b.raw_data()));
  if (!conv_grid_fits(run.gemm, run.plan)) {
    fail(Code::Unimplemented, c.op_name(), ": ", p.groups, " groups of ", p.n,
         " channels exceed the CUDA grid limits of dagrad's conv kernel");
  }
  // Scratch: NHWC copies and split-K partials. Buffers are freed stream-ordered after the
  // kernels (runtime.cpp), so freeing them at scope exit is safe.
  const ConvScratchBytes bytes = conv_scratch_bytes(type, run);
  std::vector<std::unique_ptr<Buffer>> scratch;
  auto buffer = [&](std::int64_t size) -> void* {
    if (size == 0) return nullptr;
    scratch.push_back(std::make_unique<Buffer>(allocator_for(c.device()), static_cast<std::size_t>(size)));
    return scratch.back()->data();
  };
  const ConvBuffers buffers{a.raw_data(),    b.raw_data(),    out.raw_data(),    buffer(bytes.a),
                            buffer(bytes.b), buffer(bytes.c), buffer(bytes.work)};
  launch_conv(type, run, buffers, launch.stream);
}

void register_conv2d_kernels(KernelRegistry& r) {
  const std::pair<const char*, ConvKind> ops[] = {{"Conv2D", ConvKind::Forward},
                                                  {"_FusedConv2D", ConvKind::Forward},
                                                  {"Conv2DBackpropInput", ConvKind::BackpropInput},
                                                  {"Conv2DBackpropInputV2", ConvKind::BackpropInput},
                                                  {"Conv2DBackpropFilter", ConvKind::BackpropFilter},
                                                  {"Conv2DBackpropFilterV2", ConvKind::BackpropFilter}};
  for (const auto& [op, kind] : ops) {
    add_kernels(r, op, kCuda, kBackend, kPriority, kSchemaDTypes, [kind]<class T>() -> KernelFn {
      return [kind](KernelContext& c) {
        run_own_conv(c, kind);
        if (c.op_name() == "_FusedConv2D") fused_conv2d_epilogue(c);
      };
    });
#ifdef DAGRAD_WITH_CUDNN
    add_kernels(r, op, kCuda, kCudnnBackend, kCudnnPriority, kSchemaDTypes, [kind]<class T>() -> KernelFn {
      return [kind](KernelContext& c) {
        // use_cudnn_on_gpu=false, or a case cuDNN cannot do deterministically: dagrad's kernel.
        if (!c.attr<bool>("use_cudnn_on_gpu") || !run_cudnn_conv(c, kind)) run_own_conv(c, kind);
        if (c.op_name() == "_FusedConv2D") fused_conv2d_epilogue(c);
      };
    });
#endif
  }
}

}  // namespace dagrad::cuda
