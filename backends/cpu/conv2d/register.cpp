// Registers the CPU conv kernels for Conv2D, Conv2DBackpropInput(V2), Conv2DBackpropFilter(V2):
// the (already validated) geometry from the run-time shapes, then the op's path table (dispatch.cpp),
// with the path the session or eager call forces, if any.
#include "dagrad/backends/cpu/register.hpp"
#include "dagrad/backends/cpu/conv2d/kernels.hpp"
#include "dagrad/backends/cpu/conv2d/paths.hpp"
#include "dagrad/core/tensor.hpp"
#include "dagrad/ops/fused_conv2d.hpp"

namespace dagrad::cpu {

void register_conv2d_kernels(KernelRegistry& r) {
  constexpr auto kCpu = Device::Kind::CPU;
  add_kernels(r, "Conv2D", kCpu, kBackend, kPriority, kSchemaDTypes, float_kernels([]<class T>() -> KernelFn {
                return [](KernelContext& c) {
                  const auto g = ops::conv2d_geometry(c);
                  Tensor& out = c.allocate_output(0);
                  c.ran_path = conv2d_forward<T>(g, c.input(0).data<T>(), c.input(1).data<T>(), out.data<T>(),
                                                 c.kernel_path, c.op_name());
                };
              }));
  // Conv2D, then BiasAdd (then Relu): in the kernel where the path has a fused form, else over
  // each chunk of its output in place (conv2d_forward_fused).
  add_kernels(r, "_FusedConv2D", kCpu, kBackend, kPriority, kSchemaDTypes, float_kernels([]<class T>() -> KernelFn {
                return [](KernelContext& c) {
                  const auto g = ops::conv2d_geometry(c);
                  Tensor& out = c.allocate_output(0);
                  c.ran_path = conv2d_forward_fused<T>(g, c.input(0).data<T>(), c.input(1).data<T>(),
                                                       c.input(2).data<T>(), ops::fused_conv2d_relu(c.attrs()),
                                                       out.data<T>(), c.kernel_path, c.op_name());
                };
              }));
  // V1 takes input_sizes and V2 an input tensor; either way the output shape is the input's.
  for (const char* op : {"Conv2DBackpropInput", "Conv2DBackpropInputV2"}) {
    add_kernels(r, op, kCpu, kBackend, kPriority, kSchemaDTypes, float_kernels([]<class T>() -> KernelFn {
                  return [](KernelContext& c) {
                    const auto g = ops::conv2d_geometry(c);
                    Tensor& out = c.allocate_output(0);
                    c.ran_path = conv2d_backprop_input<T>(g, c.input(1).data<T>(), c.input(2).data<T>(), out.data<T>(),
                                                          c.kernel_path, c.op_name());
                  };
                }));
  }
  for (const char* op : {"Conv2DBackpropFilter", "Conv2DBackpropFilterV2"}) {
    add_kernels(r, op, kCpu, kBackend, kPriority, kSchemaDTypes, float_kernels([]<class T>() -> KernelFn {
                  return [](KernelContext& c) {
                    const auto g = ops::conv2d_geometry(c);
                    Tensor& out = c.allocate_output(0);
                    c.ran_path = conv2d_backprop_filter<T>(g, c.input(0).data<T>(), c.input(2).data<T>(), out.data<T>(),
                                                           c.kernel_path, c.op_name());
                  };
                }));
  }
  // The path tables, for those who force a path (check_ops runs each case on each of them).
  for (const char* op : {"Conv2D", "_FusedConv2D", "Conv2DBackpropInput", "Conv2DBackpropInputV2",
                         "Conv2DBackpropFilter", "Conv2DBackpropFilterV2"}) {
    const auto names = conv2d_paths(op);
    r.set_paths(op, kCpu, kBackend, std::vector<std::string>(names.begin(), names.end()));
  }
}

}  // namespace dagrad::cpu
