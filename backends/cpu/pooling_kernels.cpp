// CPU kernels (oneTBB): MaxPool, MaxPoolGrad and AvgPool. Parallel over images; within an image
// the loops run in a fixed order, so results do not depend on the thread count. The window's
// max is its first maximal element in row-major order (TF's rule), as in the reference kernels.
#include <algorithm>
#include <vector>

#include <tbb/parallel_for.h>

#include "dagrad/backends/cpu/float_only.hpp"
#include "dagrad/backends/cpu/register.hpp"
#include "dagrad/ops/pooling_ops.hpp"

namespace dagrad::cpu {
namespace {

constexpr auto kCpu = Device::Kind::CPU;

// Calls f(out row, out col, window row range, window col range) per output position; the
// ranges are clipped to the input.
template <class F>
void for_each_output(const ops::Pool2DGeometry& geo, F&& f) {
  for (std::int64_t orow = 0; orow < geo.out_rows; ++orow) {
    const std::int64_t r0 = orow * geo.stride_rows - geo.pad_top;
    const std::int64_t r_begin = std::max<std::int64_t>(r0, 0), r_end = std::min(r0 + geo.window_rows, geo.rows);
    for (std::int64_t ocol = 0; ocol < geo.out_cols; ++ocol) {
      const std::int64_t c0 = ocol * geo.stride_cols - geo.pad_left;
      const std::int64_t c_begin = std::max<std::int64_t>(c0, 0), c_end = std::min(c0 + geo.window_cols, geo.cols);
      f(orow, ocol, r_begin, r_end, c_begin, c_end);
    }
  }
}

// For NHWC the channel loop is innermost and contiguous; NCHW uses the same code with strides.
template <class T, class Visit>
void max_pool_image(const ops::Pool2DGeometry& geo, std::int64_t n, const T* x, Visit&& visit) {
  std::vector<std::int64_t> best(static_cast<std::size_t>(geo.depth));
  for_each_output(geo, [&](std::int64_t orow, std::int64_t ocol, std::int64_t rb, std::int64_t re, std::int64_t cb,
                              std::int64_t ce) {
    for (std::int64_t d = 0; d < geo.depth; ++d) best[static_cast<std::size_t>(d)] = geo.in_offset(n, rb, cb, d);
    for (std::int64_t r = rb; r < re; ++r) {
      for (std::int64_t col = cb; col < ce; ++col) {
        for (std::int64_t d = 0; d < geo.depth; ++d) {
          const std::int64_t k = geo.in_offset(n, r, col, d);
          if (x[k] > x[best[static_cast<std::size_t>(d)]]) best[static_cast<std::size_t>(d)] = k;
        }
      }
    }
    for (std::int64_t d = 0; d < geo.depth; ++d) visit(geo.out_offset(n, orow, ocol, d), best[static_cast<std::size_t>(d)]);
  });
}

ops::Pool2DGeometry geometry(KernelContext& c, const Shape& input) { return ops::pool2d_geometry(c.op_name(), c.attrs(), input); }

}  // namespace

void register_pooling_kernels(KernelRegistry& r) {
  const std::initializer_list<DType> types = {DType::Float32, DType::Float64};
  add_kernels(r, "MaxPool", kCpu, kBackend, kPriority, types, float_only([]<class T>() -> KernelFn {
    return [](KernelContext& c) {
      const auto geo = geometry(c, c.input(0).shape());
      const T* x = c.input(0).data<T>();
      T* y = c.allocate_output(0).data<T>();
      tbb::parallel_for(std::int64_t{0}, geo.batch, [&](std::int64_t n) {
        max_pool_image(geo, n, x, [&](std::int64_t o, std::int64_t k) { y[o] = x[k]; });
      });
    };
  }));
  add_kernels(r, "MaxPoolGrad", kCpu, kBackend, kPriority, types, float_only([]<class T>() -> KernelFn {
    return [](KernelContext& c) {
      const auto geo = geometry(c, c.input(0).shape());
      const T* x = c.input(0).data<T>();
      const T* grad = c.input(2).data<T>();
      Tensor& out = c.allocate_output(0);
      T* dx = out.data<T>();
      const std::int64_t image = geo.rows * geo.cols * geo.depth;
      // Each image's windows only touch that image, so images are independent tasks.
      tbb::parallel_for(std::int64_t{0}, geo.batch, [&](std::int64_t n) {
        std::fill(dx + n * image, dx + (n + 1) * image, T(0));
        max_pool_image(geo, n, x, [&](std::int64_t o, std::int64_t k) { dx[k] += grad[o]; });
      });
    };
  }));
  add_kernels(r, "AvgPool", kCpu, kBackend, kPriority, types, float_only([]<class T>() -> KernelFn {
    return [](KernelContext& c) {
      const auto geo = geometry(c, c.input(0).shape());
      const T* x = c.input(0).data<T>();
      T* y = c.allocate_output(0).data<T>();
      tbb::parallel_for(std::int64_t{0}, geo.batch, [&](std::int64_t n) {
        for_each_output(geo, [&](std::int64_t orow, std::int64_t ocol, std::int64_t rb, std::int64_t re,
                                    std::int64_t cb, std::int64_t ce) {
          const T count = static_cast<T>((re - rb) * (ce - cb));
          for (std::int64_t d = 0; d < geo.depth; ++d) {
            T sum = 0;
            for (std::int64_t r = rb; r < re; ++r) {
              for (std::int64_t col = cb; col < ce; ++col) sum += x[geo.in_offset(n, r, col, d)];
            }
            y[geo.out_offset(n, orow, ocol, d)] = sum / count;
          }
        });
      });
    };
  }));
}

}  // namespace dagrad::cpu
