// CUDA kernels of Conv2D, Conv2DBackpropInput(V2) and Conv2DBackpropFilter(V2): dagrad's own
// implicit GEMM ("cuda"), and the "cudnn" kernels that use cuDNN when use_cudnn_on_gpu is true.
#include "dagrad/backends/cuda/conv2d_kernels.hpp"

#include <algorithm>
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
  const ConvGemm p = make_conv_gemm(kind, conv_geometry_of(c, kind));
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
  const TileShape tile = conv_tile(type);
  const std::int64_t n_tiles = (p.n + tile.bn - 1) / tile.bn;
  if (n_tiles > 65535 || p.groups > 65535) {
    fail(Code::Unimplemented, c.op_name(), ": ", p.groups, " groups of ", p.n,
         " channels exceed the CUDA grid limits of dagrad's conv kernel");
  }
  const std::int64_t tiles = ((p.m + tile.bm - 1) / tile.bm) * n_tiles * p.groups;
  int splits = choose_splits(tiles, p.k, tile.bk, sm_count(c.device().index));
  splits = static_cast<int>(std::min<std::int64_t>(splits, std::max<std::int64_t>(1, 65535 / p.groups)));
  std::unique_ptr<Buffer> work;
  if (splits > 1) {
    const std::int64_t elements = checked_mul(checked_mul(splits, p.groups), checked_mul(p.m, p.n));
    const std::int64_t bytes = checked_mul(elements, conv_accumulator_bytes(type));
    work = std::make_unique<Buffer>(allocator_for(c.device()), static_cast<std::size_t>(bytes));
  }
  launch_conv(type, p, a.raw_data(), b.raw_data(), out.raw_data(), work ? work->data() : nullptr, splits,
              launch.stream);
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
