// CUDA kernels: Shape, Reshape, BroadcastTo, BroadcastGradientArgs. As in TF, Shape's output and
// BroadcastGradientArgs' inputs and outputs live in host memory (they are read by host inputs such
// as Reshape's shape and Sum's axes, so no device round trip); Reshape aliases its input's buffer.
#include <limits>

#include "dagrad/backends/cuda/glue.hpp"
#include "dagrad/backends/cuda/launch_ops.hpp"
#include "dagrad/ops/shape_ops.hpp"

namespace dagrad::cuda {
namespace {

// A host int32 or int64 vector holding `values`; refuses values int32 cannot hold.
Tensor host_index_vector(const KernelContext& c, int output, const std::vector<std::int64_t>& values) {
  const DType dtype = c.output_dtype(output);
  Tensor out = Tensor::empty(dtype, Shape{static_cast<std::int64_t>(values.size())}, Device::cpu());
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (dtype == DType::Int64) {
      out.data<std::int64_t>()[i] = values[i];
      continue;
    }
    if (values[i] > std::numeric_limits<std::int32_t>::max()) {
      invalid_argument(c.op_name(), ": value ", values[i], " at index ", i,
                       " does not fit in int32; use an int64 output type");
    }
    out.data<std::int32_t>()[i] = static_cast<std::int32_t>(values[i]);
  }
  return out;
}

}  // namespace

void register_shape_kernels(KernelRegistry& r) {
  add_kernels(r, "Shape", kCuda, kBackend, kPriority, kSchemaDTypes, []<class T>() -> KernelFn {
    return [](KernelContext& c) { c.set_output(0, host_index_vector(c, 0, c.input(0).shape().dims())); };
  });
  add_kernels(r, "Reshape", kCuda, kBackend, kPriority, kSchemaDTypes, []<class T>() -> KernelFn {
    return [](KernelContext& c) { c.set_output(0, c.input(0).reshaped(c.output_shape(0))); };
  });
  add_kernels(r, "BroadcastTo", kCuda, kBackend, kPriority, kSchemaDTypes, []<class T>() -> KernelFn {
    return [](KernelContext& c) {
      Launch launch(c);
      const Tensor& in = c.input(0);
      Tensor& out = c.allocate_output(0);
      GatherIndex index;
      if (!make_broadcast_gather(out.shape().dims(), in.shape().dims(), &index)) {
        fail(Code::Unimplemented, "BroadcastTo: broadcasting ", in.shape().to_string(), " to ", out.shape().to_string(),
             " needs more than ", kMaxRank, " distinct axes on CUDA");
      }
      launch_gather(elem(in.dtype()), in.raw_data(), out.raw_data(), index, launch.stream);
    };
  });
  add_kernels(r, "BroadcastGradientArgs", kCuda, kBackend, kPriority, kSchemaDTypes, []<class T>() -> KernelFn {
    return [](KernelContext& c) {
      const auto [r0, r1] = ops::broadcast_reduction_axes(c.input(0).to_int64_vector(), c.input(1).to_int64_vector());
      c.set_output(0, host_index_vector(c, 0, r0));
      c.set_output(1, host_index_vector(c, 1, r1));
    };
  });
}

}  // namespace dagrad::cuda
