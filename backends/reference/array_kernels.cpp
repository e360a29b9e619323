// Reference kernels: Placeholder, Const, Identity, ZerosLike, OnesLike, Cast, NoOp.
#include <algorithm>

#include "dagrad/backends/reference/register.hpp"

namespace dagrad::reference {
namespace {

constexpr auto kCpu = Device::Kind::CPU;

}  // namespace

void register_array_kernels(KernelRegistry& r) {
  add_kernels(r, "Placeholder", kCpu, kBackend, kPriority, kSchemaDTypes, []<class T>() -> KernelFn {
    return [](KernelContext& c) {
      invalid_argument("You must feed a value for placeholder tensor '", c.node_name(), "' with dtype ",
                       dtype_name(c.output_dtype(0)), " and shape ", c.attr<Shape>("shape").to_string());
    };
  });
  add_kernels(r, "Const", kCpu, kBackend, kPriority, kSchemaDTypes,
              []<class T>() -> KernelFn { return [](KernelContext& c) { c.set_output(0, c.attr<Tensor>("value")); }; });
  add_kernels(r, "Identity", kCpu, kBackend, kPriority, kSchemaDTypes,
              []<class T>() -> KernelFn { return [](KernelContext& c) { c.set_output(0, c.input(0)); }; });
  add_kernels(r, "ZerosLike", kCpu, kBackend, kPriority, kSchemaDTypes, []<class T>() -> KernelFn {
    return [](KernelContext& c) {
      Tensor& out = c.allocate_output(0);
      std::fill_n(out.data<T>(), out.num_elements(), cast_value<T>(0.0));
    };
  });
  add_kernels(r, "OnesLike", kCpu, kBackend, kPriority, kSchemaDTypes, []<class T>() -> KernelFn {
    return [](KernelContext& c) {
      Tensor& out = c.allocate_output(0);
      std::fill_n(out.data<T>(), out.num_elements(), cast_value<T>(1.0));
    };
  });
  add_kernels(r, "Cast", kCpu, kBackend, kPriority, kSchemaDTypes, []<class S>() -> KernelFn {
    return [](KernelContext& c) {
      const Tensor& in = c.input(0);
      Tensor& out = c.allocate_output(0);
      visit_dtype(out.dtype(), [&]<class D>() {
        const S* src = in.data<S>();
        D* dst = out.data<D>();
        for (std::int64_t i = 0; i < in.num_elements(); ++i) dst[i] = cast_value<D, S>(src[i]);
      });
    };
  });
  r.add({"NoOp", kCpu, DType::Invalid, kBackend, kPriority, [](KernelContext&) {}});
}

}  // namespace dagrad::reference
