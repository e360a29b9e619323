// CPU kernels (oneTBB): AvgPool and AvgPoolGrad for every float dtype (half and bfloat16 accumulate
// in float). AvgPool runs in parallel over (image, output row); AvgPoolGrad gathers per input row,
// so results never depend on the thread count. Both return at once on an empty output.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include <tbb/parallel_for.h>

#include "dagrad/backends/cpu/avx512_target.hpp"
#include "dagrad/backends/cpu/pool_windows.hpp"
#include "dagrad/backends/cpu/register.hpp"

namespace dagrad::cpu {
namespace {

using i64 = std::int64_t;
using ops::Pool2DGeometry;
using namespace pool;  // the window helpers of pool_windows.hpp
constexpr auto kCpu = Device::Kind::CPU;

// The averages of channels [d0, d0 + N) of one NHWC window into y, the sums in one GCC vector
// held in registers (as max_block; in memory they ran 3x slower): the same additions in the same
// order as the loop below.
template <int N, class T>
[[gnu::always_inline]] inline void avg_block(const Pool2DGeometry& g, const T* x, i64 n, Span rows, Span cols, i64 d0,
                                             T count, T* y) {
  GccVector<T, N> sum{}, v;  // locals only (avx512_target.hpp)
  for (i64 r = rows.begin; r < rows.end; ++r) {
    for (i64 col = cols.begin; col < cols.end; ++col) {
      std::memcpy(&v, x + g.in_offset(n, r, col, d0), sizeof v);
      sum += v;
    }
  }
  sum /= count;
  std::memcpy(y, &sum, sizeof sum);
}

// AvgPool's output row (n, orow); NHWC float and double in blocks of 16 channels first.
template <class T>
[[gnu::always_inline]] inline void avg_pool_row(const Pool2DGeometry& g, const T* x, T* y, i64 n, i64 orow) {
  using A = accumulator_t<T>;
  const i64 ds = in_depth_stride(g), ods = out_depth_stride(g);
  std::vector<A> sum(static_cast<std::size_t>(g.depth));
  const Span rows = window(orow, g.stride_rows, g.pad_top, g.window_rows, g.rows);
  for (i64 ocol = 0; ocol < g.out_cols; ++ocol) {
    const Span cols = window(ocol, g.stride_cols, g.pad_left, g.window_cols, g.cols);
    // SAME windows average only the elements inside the input (AvgPool has no EXPLICIT padding).
    const A count = static_cast<A>((rows.end - rows.begin) * (cols.end - cols.begin));
    T* out = y + g.out_offset(n, orow, ocol, 0);
    i64 d0 = 0;
    if constexpr (std::is_floating_point_v<T>) {
      constexpr i64 kBlock = 16;
      for (; !g.nchw && d0 + kBlock <= g.depth; d0 += kBlock)
        avg_block<kBlock>(g, x, n, rows, cols, d0, count, out + d0);
    }
    std::fill(sum.begin() + d0, sum.end(), A(0));
    for (i64 r = rows.begin; r < rows.end; ++r) {
      for (i64 col = cols.begin; col < cols.end; ++col) {
        const T* p = x + g.in_offset(n, r, col, 0);
        for (i64 d = d0; d < g.depth; ++d) sum[static_cast<std::size_t>(d)] += static_cast<A>(p[d * ds]);
      }
    }
    for (i64 d = d0; d < g.depth; ++d) out[d * ods] = static_cast<T>(sum[static_cast<std::size_t>(d)] / count);
  }
}
template <class T>
void avg_pool_row_baseline(const Pool2DGeometry& g, const T* x, T* y, i64 n, i64 orow) {
  avg_pool_row(g, x, y, n, orow);
}
template <class T>
DAGRAD_AVX512_TARGET void avg_pool_row_avx512(const Pool2DGeometry& g, const T* x, T* y, i64 n, i64 orow) {
  avg_pool_row(g, x, y, n, orow);
}

template <class T>
void avg_pool(KernelContext& c) {
  const auto g = geometry(c, c.input(0).shape());
  const T* x = c.input(0).data<T>();
  T* y = c.allocate_output(0).data<T>();
  if (c.output_shape(0).num_elements() == 0) return;
  const auto row = use_avx512() ? &avg_pool_row_avx512<T> : &avg_pool_row_baseline<T>;
  parallel_out_rows(g, [&](i64 n, i64 orow) { row(g, x, y, n, orow); });
}

// Output rows (or columns) whose windows contain input position i: [first, last]. i + pad stays
// below the padded size (the geometry bounds it by int64), and first = ceil(lo / stride) is taken
// without lo + stride - 1, which wraps negative for a stride near INT64_MAX.
Span covering(i64 i, i64 stride, i64 pad, i64 size, i64 out_size) {
  const i64 lo = i + pad - size + 1;
  const i64 first = lo <= 0 ? 0 : lo / stride + (lo % stride != 0 ? 1 : 0);
  return {first, std::min(out_size - 1, (i + pad) / stride)};
}

// Each input element gathers grad / count from the windows that contain it, row by row.
template <class T>
void avg_pool_grad(KernelContext& c) {
  using A = accumulator_t<T>;
  const T* grad = c.input(1).data<T>();
  Tensor& out = c.allocate_output(0);
  if (out.num_elements() == 0) return;
  const auto g = geometry(c, out.shape());
  T* dx = out.data<T>();
  const i64 ds = in_depth_stride(g), ods = out_depth_stride(g);
  tbb::parallel_for(i64{0}, g.batch * g.rows, [&](i64 task) {
    const i64 n = task / g.rows, r = task % g.rows;
    std::vector<A> acc(static_cast<std::size_t>(g.depth));
    const Span orows = covering(r, g.stride_rows, g.pad_top, g.window_rows, g.out_rows);
    for (i64 col = 0; col < g.cols; ++col) {
      const Span ocols = covering(col, g.stride_cols, g.pad_left, g.window_cols, g.out_cols);
      std::fill(acc.begin(), acc.end(), A(0));
      for (i64 orow = orows.begin; orow <= orows.end; ++orow) {
        const Span wr = window(orow, g.stride_rows, g.pad_top, g.window_rows, g.rows);
        for (i64 ocol = ocols.begin; ocol <= ocols.end; ++ocol) {
          const Span wc = window(ocol, g.stride_cols, g.pad_left, g.window_cols, g.cols);
          const A count = static_cast<A>((wr.end - wr.begin) * (wc.end - wc.begin));
          const T* p = grad + g.out_offset(n, orow, ocol, 0);
          for (i64 d = 0; d < g.depth; ++d) acc[static_cast<std::size_t>(d)] += static_cast<A>(p[d * ods]) / count;
        }
      }
      T* q = dx + g.in_offset(n, r, col, 0);
      for (i64 d = 0; d < g.depth; ++d) q[d * ds] = static_cast<T>(acc[static_cast<std::size_t>(d)]);
    }
  });
}
}  // namespace

void register_avg_pool_kernels(KernelRegistry& r) {
  add_kernels(r, "AvgPool", kCpu, kBackend, kPriority, kSchemaDTypes,
              float_kernels([]<class T>() -> KernelFn { return avg_pool<T>; }));
  add_kernels(r, "AvgPoolGrad", kCpu, kBackend, kPriority, kSchemaDTypes,
              float_kernels([]<class T>() -> KernelFn { return avg_pool_grad<T>; }));
}

}  // namespace dagrad::cpu
