// CUDA kernels: Equal (broadcasting, bool output) and ArgMax (registrations; kernels in compare.cu).
#include "dagrad/backends/cuda/glue.hpp"
#include "dagrad/backends/cuda/launch_ops.hpp"

namespace dagrad::cuda {

void register_compare_kernels(KernelRegistry& r) {
  add_kernels(r, "ArgMax", kCuda, kBackend, kPriority, kSchemaDTypes, []<class T>() -> KernelFn {
    return [](KernelContext& c) {
      Launch launch(c);
      const Tensor& in = c.input(0);
      std::int64_t axis = c.input(1).to_int64_vector().front();  // a host input, validated by the shape function
      if (axis < 0) axis += in.rank();
      Tensor& out = c.allocate_output(0);
      launch_arg_max(elem(in.dtype()), elem(out.dtype()), in.raw_data(), out.raw_data(),
                     split_at_axis(in.shape().dims(), static_cast<int>(axis)), launch.stream);
    };
  });
  add_kernels(r, "Equal", kCuda, kBackend, kPriority, kSchemaDTypes, []<class T>() -> KernelFn {
    return [](KernelContext& c) {
      Launch launch(c);
      const Tensor& x = c.input(0);
      const Tensor& y = c.input(1);
      Tensor& out = c.allocate_output(0);
      BroadcastIndex index;
      if (!make_broadcast_index(out.shape().dims(), x.shape().dims(), y.shape().dims(), &index)) {
        fail(Code::Unimplemented, "Equal: broadcasting ", x.shape().to_string(), " with ", y.shape().to_string(),
             " needs more than ", kMaxRank, " distinct axes on CUDA");
      }
      launch_equal(elem(x.dtype()), x.raw_data(), y.raw_data(), static_cast<bool*>(out.raw_data()), index,
                   launch.stream);
    };
  });
}

}  // namespace dagrad::cuda
