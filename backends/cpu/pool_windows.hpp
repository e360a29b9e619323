// What the CPU pooling kernels (max_pool_kernels.cpp, avg_pool_kernels.cpp) share: a window's
// clipped span, the channel strides of either layout, and the parallel walk over output rows.
#pragma once

#include <algorithm>
#include <cstdint>

#include <tbb/parallel_for.h>

#include "dagrad/core/kernel_registry.hpp"
#include "dagrad/ops/pooling_ops.hpp"

namespace dagrad::cpu::pool {

inline ops::Pool2DGeometry geometry(KernelContext& c, const Shape& input) {
  return ops::pool2d_geometry(c.op_name(), c.attrs(), input);
}

// Window rows (or columns) [begin, end) of output position o, clipped to the input.
struct Span {
  std::int64_t begin, end;
};
inline Span window(std::int64_t o, std::int64_t stride, std::int64_t pad, std::int64_t size, std::int64_t extent) {
  const std::int64_t start = o * stride - pad;
  return {std::max<std::int64_t>(start, 0), std::min(start + size, extent)};
}

// Element stride of the channel dim in the input and the output.
inline std::int64_t in_depth_stride(const ops::Pool2DGeometry& g) { return g.nchw ? g.rows * g.cols : 1; }
inline std::int64_t out_depth_stride(const ops::Pool2DGeometry& g) { return g.nchw ? g.out_rows * g.out_cols : 1; }

// Calls f(n, orow) for every output row, in parallel.
template <class F>
void parallel_out_rows(const ops::Pool2DGeometry& g, F&& f) {
  tbb::parallel_for(std::int64_t{0}, g.batch * g.out_rows,
                    [&](std::int64_t task) { f(task / g.out_rows, task % g.out_rows); });
}

}  // namespace dagrad::cpu::pool
