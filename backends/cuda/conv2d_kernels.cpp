// CUDA kernels of Conv2D, Conv2DBackpropInput(V2) and Conv2DBackpropFilter(V2): dagrad's own
// implicit GEMM ("cuda"), and the "cudnn" kernels that use cuDNN when use_cudnn_on_gpu is true.
#include "dagrad/backends/cuda/conv2d_kernels.hpp"

#include <algorithm>
#include <cstdint>
#include <memory>

#include "dagrad/backends/cuda/conv_launch.hpp"
#include "dagrad/backends/cuda/glue.hpp"

namespace dagrad::cuda {
namespace {

int sm_count(int device) {
  int count = 0;
  check_cuda(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device), "cudaDeviceGetAttribute");
  return std::max(count, 1);
}

// A copy of the 4-d NCHW tensor `t` in NHWC order, made on the stream.
std::unique_ptr<Buffer> nhwc_copy(const KernelContext& c, const Tensor& t, void* stream) {
  auto copy = std::make_unique<Buffer>(allocator_for(c.device()), static_cast<std::size_t>(t.nbytes()));
  const std::int64_t dims[4] = {t.shape()[0], t.shape()[1], t.shape()[2], t.shape()[3]};
  const int to_nhwc[4] = {0, 2, 3, 1};
  launch_permute4(elem(t.dtype()), t.raw_data(), copy->data(), dims, to_nhwc, stream);
  return copy;
}

bool aligned_16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

}  // namespace

ops::Conv2DGeometry conv_geometry_of(const KernelContext& c, ConvKind kind) {
  const ops::Conv2DAttrs attrs = ops::parse_conv2d_attrs(c.op_name(), c.attrs());
  const bool wrt_input = kind == ConvKind::BackpropInput, wrt_filter = kind == ConvKind::BackpropFilter;
  const Shape& input = wrt_input ? c.output_shape(0) : c.input(0).shape();
  const Shape& filter = wrt_filter ? c.output_shape(0) : c.input(1).shape();
  return ops::conv2d_geometry(c.op_name(), attrs, input, filter);
}

void run_own_conv(KernelContext& c, ConvKind kind) {
  Launch launch(c);
  ConvGemm p = make_conv_gemm(kind, conv_geometry_of(c, kind));
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
  const void* a_data = a.raw_data();
  const void* b_data = b.raw_data();
  // NCHW filter gradient: x and dy are copied to NHWC, where the FilterNhwc kernel's loads are
  // coalesced (the generic kernel's NCHW gathers are strided).
  std::unique_ptr<Buffer> x_nhwc, dy_nhwc;
  if (kind == ConvKind::BackpropFilter && p.nchw) {
    ConvGemm nhwc = p;
    nhwc.nchw = false;
    finish_conv_gemm(&nhwc);
    if (nhwc_variant(nhwc) == ConvVariant::FilterNhwc) {
      x_nhwc = nhwc_copy(c, a, launch.stream);
      dy_nhwc = nhwc_copy(c, b, launch.stream);
      a_data = x_nhwc->data();
      b_data = dy_nhwc->data();
      p = nhwc;
    }
  }
  ConvPlan plan = plan_conv(type, p, sm_count(c.device().index), aligned_16(a_data) && aligned_16(b_data));
  const std::int64_t n_tiles = (p.n + plan.tile.bn - 1) / plan.tile.bn;
  if (n_tiles > 65535 || p.groups > 65535) {
    fail(Code::Unimplemented, c.op_name(), ": ", p.groups, " groups of ", p.n,
         " channels exceed the CUDA grid limits of dagrad's conv kernel");
  }
  plan.splits = static_cast<int>(std::min<std::int64_t>(plan.splits, std::max<std::int64_t>(1, 65535 / p.groups)));
  std::unique_ptr<Buffer> work;
  if (plan.splits > 1) {
    const std::int64_t elements = checked_mul(checked_mul(plan.splits, p.groups), checked_mul(p.m, p.n));
    const std::int64_t bytes = checked_mul(elements, conv_accumulator_bytes(type));
    work = std::make_unique<Buffer>(allocator_for(c.device()), static_cast<std::size_t>(bytes));
  }
  // The buffers are freed stream-ordered after the kernels (runtime.cpp), so scope exit is safe.
  launch_conv(type, p, plan, a_data, b_data, out.raw_data(), work ? work->data() : nullptr, launch.stream);
}

void register_conv2d_kernels(KernelRegistry& r) {
  const std::pair<const char*, ConvKind> ops[] = {{"Conv2D", ConvKind::Forward},
                                                  {"Conv2DBackpropInput", ConvKind::BackpropInput},
                                                  {"Conv2DBackpropInputV2", ConvKind::BackpropInput},
                                                  {"Conv2DBackpropFilter", ConvKind::BackpropFilter},
                                                  {"Conv2DBackpropFilterV2", ConvKind::BackpropFilter}};
  for (const auto& [op, kind] : ops) {
    add_kernels(r, op, kCuda, kBackend, kPriority, kFloatTypes, [kind]<class T>() -> KernelFn {
      return [kind](KernelContext& c) { run_own_conv(c, kind); };
    });
#ifdef DAGRAD_WITH_CUDNN
    add_kernels(r, op, kCuda, kCudnnBackend, kCudnnPriority, kFloatTypes, [kind]<class T>() -> KernelFn {
      return [kind](KernelContext& c) {
        // use_cudnn_on_gpu=false, or a case cuDNN cannot do deterministically: dagrad's kernel.
        if (!c.attr<bool>("use_cudnn_on_gpu") || !run_cudnn_conv(c, kind)) run_own_conv(c, kind);
      };
    });
#endif
  }
}

}  // namespace dagrad::cuda
