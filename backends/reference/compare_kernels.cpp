// Reference kernels: ArgMax (first maximum along an axis) and Equal (broadcasting, bool output).
#include <xtensor/xbroadcast.hpp>

#include "dagrad/backends/reference/register.hpp"
#include "dagrad/core/tensor_xt.hpp"

namespace dagrad::reference {
namespace {

constexpr auto kCpu = Device::Kind::CPU;

template <class T, class Out>
void arg_max(KernelContext& c) {
  const Tensor& in = c.input(0);
  const std::int64_t rank = in.rank();
  std::int64_t axis = c.input(1).to_int64_vector().front();
  if (axis < 0) axis += rank;
  Out* y = c.allocate_output(0).data<Out>();
  // The shape function rejects an empty axis: a non-empty output has a non-empty input, whose dims
  // multiply without overflow.
  if (c.output_shape(0).num_elements() == 0) return;
  std::int64_t outer = 1, inner = 1;
  for (int i = 0; i < rank; ++i) {
    if (i < axis)
      outer *= in.shape()[i];
    else if (i > axis)
      inner *= in.shape()[i];
  }
  const std::int64_t size = in.shape()[static_cast<int>(axis)];
  const T* x = in.data<T>();
  for (std::int64_t o = 0; o < outer; ++o) {
    for (std::int64_t i = 0; i < inner; ++i) {
      std::int64_t best = 0;
      // Compared in the accumulator type: exact for every dtype (double would merge int64s > 2^53).
      using V = accumulator_t<T>;
      for (std::int64_t k = 1; k < size; ++k) {
        if (static_cast<V>(x[(o * size + k) * inner + i]) > static_cast<V>(x[(o * size + best) * inner + i])) best = k;
      }
      y[o * inner + i] = static_cast<Out>(best);
    }
  }
}

}  // namespace

void register_compare_kernels(KernelRegistry& r) {
  add_kernels(r, "ArgMax", kCpu, kBackend, kPriority, kSchemaDTypes, []<class T>() -> KernelFn {
    return [](KernelContext& c) {
      if (c.output_dtype(0) == DType::Int32)
        arg_max<T, std::int32_t>(c);
      else
        arg_max<T, std::int64_t>(c);
    };
  });
  add_kernels(r, "Equal", kCpu, kBackend, kPriority, kSchemaDTypes, []<class T>() -> KernelFn {
    return [](KernelContext& c) {
      Tensor& out = c.allocate_output(0);
      if (out.num_elements() == 0) return;  // an empty input's strides may overflow
      const auto shape = detail::xt_shape(out.shape());
      auto xs = xt::broadcast(host_view<T>(c.input(0)), shape);
      auto ys = xt::broadcast(host_view<T>(c.input(1)), shape);
      auto xi = xs.begin();
      auto yi = ys.begin();
      bool* z = out.data<bool>();
      for (std::int64_t i = 0; i < out.num_elements(); ++i, ++xi, ++yi) z[i] = *xi == *yi;
    };
  });
}

}  // namespace dagrad::reference
