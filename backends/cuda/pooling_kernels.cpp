// CUDA kernels: MaxPool, AvgPool, MaxPoolGrad, MaxPoolGradGrad, AvgPoolGrad and
// _MaxPoolGradReluGrad (registrations; the window geometry comes from ops::pool2d_geometry, the
// one every backend reads).
#include <algorithm>

#include "dagrad/backends/cuda/glue.hpp"
#include "dagrad/backends/cuda/launch_ops.hpp"
#include "dagrad/backends/cuda/pool_geometry.hpp"
#include "dagrad/ops/pooling_ops.hpp"

namespace dagrad::cuda {
namespace {

// The geometry of this call over `input` (the forward input's shape), as the kernels' plain struct.
PoolIndex pool_index(const KernelContext& c, const Shape& input) {
  return pool_index_of(ops::pool2d_geometry(c.op_name(), c.attrs(), input));
}

// MaxPoolGrad; with relu_mask (_MaxPoolGradReluGrad), ReluGrad's kernel then runs in place on its
// result with input 3 as the features, on the same stream.
void max_pool_grad(KernelContext& c, bool relu_mask) {
  Launch launch(c);
  const PoolIndex p = pool_index(c, c.input(0).shape());
  Tensor& out = c.allocate_output(0);
  if (out.num_elements() == 0) return;
  // One int64 per window: its argmax, found once and read by every input element it covers.
  const std::int64_t windows = std::max<std::int64_t>(pool_out_count(p), 1);
  Buffer argmax(allocator_for(c.device()), static_cast<std::size_t>(checked_mul(windows, 8)));
  launch_max_pool_grad(elem(out.dtype()), c.input(0).raw_data(), c.input(2).raw_data(), out.raw_data(),
                       static_cast<std::int64_t*>(argmax.data()), p, launch.stream);
  if (relu_mask) {
    launch_relu_grad(elem(out.dtype()), out.raw_data(), c.input(3).raw_data(), out.raw_data(), out.num_elements(),
                     launch.stream);
  }
}

}  // namespace

void register_pooling_kernels(KernelRegistry& r) {
  add_kernels(r, "MaxPool", kCuda, kBackend, kPriority, kSchemaDTypes, []<class T>() -> KernelFn {
    return [](KernelContext& c) {
      Launch launch(c);
      Tensor& out = c.allocate_output(0);
      launch_max_pool(elem(out.dtype()), c.input(0).raw_data(), out.raw_data(), pool_index(c, c.input(0).shape()),
                      launch.stream);
    };
  });
  add_kernels(r, "AvgPool", kCuda, kBackend, kPriority, kSchemaDTypes, []<class T>() -> KernelFn {
    return [](KernelContext& c) {
      Launch launch(c);
      Tensor& out = c.allocate_output(0);
      launch_avg_pool(elem(out.dtype()), c.input(0).raw_data(), out.raw_data(), pool_index(c, c.input(0).shape()),
                      launch.stream);
    };
  });
  add_kernels(r, "MaxPoolGrad", kCuda, kBackend, kPriority, kSchemaDTypes,
              []<class T>() -> KernelFn { return [](KernelContext& c) { max_pool_grad(c, false); }; });
  add_kernels(r, "_MaxPoolGradReluGrad", kCuda, kBackend, kPriority, kSchemaDTypes,
              []<class T>() -> KernelFn { return [](KernelContext& c) { max_pool_grad(c, true); }; });
  add_kernels(r, "MaxPoolGradGrad", kCuda, kBackend, kPriority, kSchemaDTypes, []<class T>() -> KernelFn {
    return [](KernelContext& c) {
      Launch launch(c);
      Tensor& out = c.allocate_output(0);
      launch_max_pool_grad_grad(elem(out.dtype()), c.input(0).raw_data(), c.input(2).raw_data(), out.raw_data(),
                                pool_index(c, c.input(0).shape()), launch.stream);
    };
  });
  add_kernels(r, "AvgPoolGrad", kCuda, kBackend, kPriority, kSchemaDTypes, []<class T>() -> KernelFn {
    return [](KernelContext& c) {
      Launch launch(c);
      Tensor& out = c.allocate_output(0);  // orig_input_shape (a host input) gave its shape
      launch_avg_pool_grad(elem(out.dtype()), c.input(1).raw_data(), out.raw_data(), pool_index(c, out.shape()),
                           launch.stream);
    };
  });
}

}  // namespace dagrad::cuda
