// Reference kernels: Shape, Reshape, BroadcastTo, BroadcastGradientArgs (all validation already
// happened in the shape functions, which run again with the concrete values before each kernel).
#include <limits>

#include "dagrad/backends/reference/register.hpp"
#include "dagrad/ops/shape_ops.hpp"

namespace dagrad::reference {
namespace {

constexpr auto kCpu = Device::Kind::CPU;

// Writes int64 values into an int32 or int64 output, refusing values int32 cannot hold.
void write_index_vector(KernelContext& c, int output, const std::vector<std::int64_t>& values) {
  Tensor& out = c.allocate_output(output);
  if (out.dtype() == DType::Int64) {
    std::copy(values.begin(), values.end(), out.data<std::int64_t>());
    return;
  }
  auto* dst = out.data<std::int32_t>();
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (values[i] > std::numeric_limits<std::int32_t>::max()) {
      invalid_argument(c.op_name(), ": value ", values[i], " at index ", i,
                       " does not fit in int32; use an int64 output type");
    }
    dst[i] = static_cast<std::int32_t>(values[i]);
  }
}

}  // namespace

void register_shape_kernels(KernelRegistry& r) {
  add_kernels(r, "Shape", kCpu, kBackend, kPriority, kSchemaDTypes, []<class T>() -> KernelFn {
    return [](KernelContext& c) { write_index_vector(c, 0, c.input(0).shape().dims()); };
  });
  add_kernels(r, "Reshape", kCpu, kBackend, kPriority, kSchemaDTypes, []<class T>() -> KernelFn {
    // Shares the input's buffer: a reshape never copies.
    return [](KernelContext& c) { c.set_output(0, c.input(0).reshaped(c.output_shape(0))); };
  });
  add_kernels(r, "BroadcastTo", kCpu, kBackend, kPriority, kSchemaDTypes, []<class T>() -> KernelFn {
    return [](KernelContext& c) {
      const Tensor& in = c.input(0);
      Tensor& out = c.allocate_output(0);
      if (out.num_elements() == 0) return;  // an empty input's strides may overflow
      const Shape& os = out.shape();
      const int rank = os.rank(), offset = os.rank() - in.rank();
      // Input stride per output axis; 0 along broadcast (size-1 or missing) axes.
      std::vector<std::int64_t> stride(static_cast<std::size_t>(rank), 0);
      std::int64_t s = 1;
      for (int a = in.rank() - 1; a >= 0; --a) {
        if (in.shape()[a] != 1) stride[static_cast<std::size_t>(a + offset)] = s;
        s *= in.shape()[a];
      }
      std::vector<std::int64_t> index(static_cast<std::size_t>(rank), 0);
      const T* src = in.data<T>();
      T* dst = out.data<T>();
      for (std::int64_t i = 0; i < out.num_elements(); ++i) {
        std::int64_t from = 0;
        for (int a = 0; a < rank; ++a) from += index[static_cast<std::size_t>(a)] * stride[static_cast<std::size_t>(a)];
        dst[i] = src[from];
        for (int a = rank - 1; a >= 0; --a) {
          if (++index[static_cast<std::size_t>(a)] < os[a]) break;
          index[static_cast<std::size_t>(a)] = 0;
        }
      }
    };
  });
  add_kernels(r, "BroadcastGradientArgs", kCpu, kBackend, kPriority, kSchemaDTypes, []<class T>() -> KernelFn {
    return [](KernelContext& c) {
      const auto [r0, r1] = ops::broadcast_reduction_axes(c.input(0).to_int64_vector(), c.input(1).to_int64_vector());
      write_index_vector(c, 0, r0);
      write_index_vector(c, 1, r1);
    };
  });
}

}  // namespace dagrad::reference
