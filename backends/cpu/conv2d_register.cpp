// Registers the CPU conv kernels for Conv2D, Conv2DBackpropInput(V2), Conv2DBackpropFilter(V2):
// recompute the (already validated) geometry from the run-time shapes and call conv2d_kernels.
#include "dagrad/backends/cpu/conv2d_kernels.hpp"
#include "dagrad/backends/cpu/register.hpp"
#include "dagrad/core/tensor.hpp"

namespace dagrad::cpu {
namespace {

constexpr auto kCpu = Device::Kind::CPU;
const std::initializer_list<DType> kFloats = {DType::Half, DType::BFloat16, DType::Float32, DType::Float64};

// The geometry from the activation-side shape (input or its gradient) and the filter shape.
ops::Conv2DGeometry geometry(const KernelContext& c, const Shape& input, const Shape& filter) {
  return ops::conv2d_geometry(c.op_name(), ops::parse_conv2d_attrs(c.op_name(), c.attrs()), input, filter);
}

}  // namespace

void register_conv2d_kernels(KernelRegistry& r) {
  add_kernels(r, "Conv2D", kCpu, kBackend, kPriority, kFloats, []<class T>() -> KernelFn {
    if constexpr (!is_floating_v<T>)
      return {};  // instantiated by visit_dtype, never registered
    else
      return [](KernelContext& c) {
        const auto g = geometry(c, c.input(0).shape(), c.input(1).shape());
        Tensor& out = c.allocate_output(0);
        conv2d_forward<T>(g, c.input(0).data<T>(), c.input(1).data<T>(), out.data<T>());
      };
  });
  // V1 takes input_sizes and V2 an input tensor; either way the output shape is the input's.
  for (const char* op : {"Conv2DBackpropInput", "Conv2DBackpropInputV2"}) {
    add_kernels(r, op, kCpu, kBackend, kPriority, kFloats, []<class T>() -> KernelFn {
      if constexpr (!is_floating_v<T>)
        return {};
      else
        return [](KernelContext& c) {
          const auto g = geometry(c, c.output_shape(0), c.input(1).shape());
          Tensor& out = c.allocate_output(0);
          conv2d_backprop_input<T>(g, c.input(1).data<T>(), c.input(2).data<T>(), out.data<T>());
        };
    });
  }
  for (const char* op : {"Conv2DBackpropFilter", "Conv2DBackpropFilterV2"}) {
    add_kernels(r, op, kCpu, kBackend, kPriority, kFloats, []<class T>() -> KernelFn {
      if constexpr (!is_floating_v<T>)
        return {};
      else
        return [](KernelContext& c) {
          const auto g = geometry(c, c.input(0).shape(), c.output_shape(0));
          Tensor& out = c.allocate_output(0);
          conv2d_backprop_filter<T>(g, c.input(0).data<T>(), c.input(2).data<T>(), out.data<T>());
        };
    });
  }
}

}  // namespace dagrad::cpu
