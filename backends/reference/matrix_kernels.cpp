// Reference kernels: MatMul (double accumulation, one rounding) and Transpose (any dtype, any rank).
#include <cstring>
#include <vector>

#include "dagrad/backends/reference/register.hpp"

namespace dagrad::reference {
namespace {

constexpr auto kCpu = Device::Kind::CPU;

}  // namespace

void register_matrix_kernels(KernelRegistry& r) {
  add_kernels(r, "MatMul", kCpu, kBackend, kPriority, kSchemaDTypes, []<class T>() -> KernelFn {
    return [](KernelContext& c) {
      const Tensor& a = c.input(0);
      const Tensor& b = c.input(1);
      const bool ta = c.attr<bool>("transpose_a"), tb = c.attr<bool>("transpose_b");
      Tensor& out = c.allocate_output(0);
      if (out.num_elements() == 0) return;
      const std::int64_t m = out.shape()[0], n = out.shape()[1];
      const std::int64_t k = ta ? a.shape()[0] : a.shape()[1];
      const std::int64_t a_cols = a.shape()[1], b_cols = b.shape()[1];
      const T* pa = a.data<T>();
      const T* pb = b.data<T>();
      T* pc = out.data<T>();
      for (std::int64_t i = 0; i < m; ++i) {
        for (std::int64_t j = 0; j < n; ++j) {
          double sum = 0;
          for (std::int64_t p = 0; p < k; ++p) {
            const T av = ta ? pa[p * a_cols + i] : pa[i * a_cols + p];
            const T bv = tb ? pb[j * b_cols + p] : pb[p * b_cols + j];
            sum += widen<T>(av) * widen<T>(bv);
          }
          pc[i * n + j] = narrow<T>(sum);
        }
      }
    };
  });
  add_kernels(r, "Transpose", kCpu, kBackend, kPriority, kSchemaDTypes, []<class T>() -> KernelFn {
    return [](KernelContext& c) {
      const Tensor& x = c.input(0);
      const auto perm = c.input(1).to_int64_vector();
      Tensor& out = c.allocate_output(0);
      if (out.num_elements() == 0) return;  // an empty input's strides may overflow
      const int rank = x.rank();
      // Input strides read in output-axis order.
      std::vector<std::int64_t> in_stride(static_cast<std::size_t>(rank), 1), strides(static_cast<std::size_t>(rank));
      for (int a = rank - 2; a >= 0; --a) {
        in_stride[static_cast<std::size_t>(a)] = in_stride[static_cast<std::size_t>(a + 1)] * x.shape()[a + 1];
      }
      for (int a = 0; a < rank; ++a)
        strides[static_cast<std::size_t>(a)] = in_stride[static_cast<std::size_t>(perm[static_cast<std::size_t>(a)])];
      std::vector<std::int64_t> index(static_cast<std::size_t>(rank), 0);
      const T* src = x.data<T>();
      T* dst = out.data<T>();
      for (std::int64_t i = 0; i < out.num_elements(); ++i) {
        std::int64_t offset = 0;
        for (int a = 0; a < rank; ++a)
          offset += index[static_cast<std::size_t>(a)] * strides[static_cast<std::size_t>(a)];
        dst[i] = src[offset];
        for (int a = rank - 1; a >= 0; --a) {
          if (++index[static_cast<std::size_t>(a)] < out.shape()[a]) break;
          index[static_cast<std::size_t>(a)] = 0;
        }
      }
    };
  });
}

}  // namespace dagrad::reference
