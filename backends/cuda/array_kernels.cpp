// CUDA kernels: Placeholder, Const, Identity, ZerosLike, OnesLike, Cast, NoOp.
#include "dagrad/backends/cuda/glue.hpp"

namespace dagrad::cuda {

void register_array_kernels(KernelRegistry& r) {
  add_kernels(r, "Placeholder", kCuda, kBackend, kPriority, kSchemaDTypes, []<class T>() -> KernelFn {
    return [](KernelContext& c) {
      invalid_argument("You must feed a value for placeholder tensor '", c.node_name(), "' with dtype ",
                       dtype_name(c.output_dtype(0)), " and shape ", c.attr<Shape>("shape").to_string());
    };
  });
  add_kernels(r, "Const", kCuda, kBackend, kPriority, kSchemaDTypes, []<class T>() -> KernelFn {
    return [](KernelContext& c) { c.set_output(0, c.attr<Tensor>("value").to(c.device())); };
  });
  add_kernels(r, "Identity", kCuda, kBackend, kPriority, kSchemaDTypes,
              []<class T>() -> KernelFn { return [](KernelContext& c) { c.set_output(0, c.input(0)); }; });
  for (auto [op, value] : {std::pair{"ZerosLike", 0.0}, std::pair{"OnesLike", 1.0}}) {
    add_kernels(r, op, kCuda, kBackend, kPriority, kSchemaDTypes, [value]<class T>() -> KernelFn {
      return [value](KernelContext& c) {
        Launch launch(c);
        Tensor& out = c.allocate_output(0);
        launch_fill(elem(out.dtype()), out.raw_data(), out.num_elements(), value, launch.stream);
      };
    });
  }
  add_kernels(r, "Cast", kCuda, kBackend, kPriority, kSchemaDTypes, []<class S>() -> KernelFn {
    return [](KernelContext& c) {
      Launch launch(c);
      const Tensor& in = c.input(0);
      Tensor& out = c.allocate_output(0);
      launch_cast(elem(in.dtype()), in.raw_data(), elem(out.dtype()), out.raw_data(), in.num_elements(), launch.stream);
    };
  });
  r.add({"NoOp", kCuda, DType::Invalid, kBackend, kPriority, [](KernelContext&) {}});
}

}  // namespace dagrad::cuda
