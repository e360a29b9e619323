// Index arithmetic of the CUDA pooling kernels, shared with the host tests: offsets in NHWC/NCHW,
// the clipped window of an output position, and (for the gradients, which gather instead of
// scattering so that no atomics are needed) the output positions whose window covers an input.
#pragma once

#include <cstdint>

#include "dagrad/backends/cuda/hd.hpp"

namespace dagrad::cuda {

// The fields of ops::Pool2DGeometry, as a plain struct the kernels take by value.
struct PoolIndex {
  bool nchw = false;
  std::int64_t batch = 0, rows = 0, cols = 0, depth = 0;
  std::int64_t window_rows = 1, window_cols = 1, stride_rows = 1, stride_cols = 1;
  std::int64_t out_rows = 0, out_cols = 0;
  std::int64_t pad_top = 0, pad_left = 0;
};

DAGRAD_HD std::int64_t pool_out_count(const PoolIndex& g) { return g.batch * g.out_rows * g.out_cols * g.depth; }
DAGRAD_HD std::int64_t pool_in_count(const PoolIndex& g) { return g.batch * g.rows * g.cols * g.depth; }

// (n, row, col, channel) of one element; `rows`/`cols` are those of the tensor it indexes.
struct PoolPos {
  std::int64_t n = 0, row = 0, col = 0, d = 0;
};

DAGRAD_HD std::int64_t pool_offset(bool nchw, std::int64_t rows, std::int64_t cols, std::int64_t depth,
                                   const PoolPos& p) {
  return nchw ? ((p.n * depth + p.d) * rows + p.row) * cols + p.col
              : ((p.n * rows + p.row) * cols + p.col) * depth + p.d;
}
DAGRAD_HD PoolPos pool_unravel(bool nchw, std::int64_t rows, std::int64_t cols, std::int64_t depth,
                               std::int64_t linear) {
  PoolPos p;
  if (nchw) {
    p.col = linear % cols, linear /= cols;
    p.row = linear % rows, linear /= rows;
    p.d = linear % depth, p.n = linear / depth;
  } else {
    p.d = linear % depth, linear /= depth;
    p.col = linear % cols, linear /= cols;
    p.row = linear % rows, p.n = linear / rows;
  }
  return p;
}
DAGRAD_HD std::int64_t pool_in_offset(const PoolIndex& g, const PoolPos& p) {
  return pool_offset(g.nchw, g.rows, g.cols, g.depth, p);
}
DAGRAD_HD std::int64_t pool_out_offset(const PoolIndex& g, const PoolPos& p) {
  return pool_offset(g.nchw, g.out_rows, g.out_cols, g.depth, p);
}

// A half-open index range.
struct PoolRange {
  std::int64_t begin = 0, end = 0;
};

// The input rows (or columns) of the window at output position `o`, clipped to [0, size).
DAGRAD_HD PoolRange pool_window(std::int64_t o, std::int64_t stride, std::int64_t pad, std::int64_t window,
                                std::int64_t size) {
  const std::int64_t first = o * stride - pad;
  PoolRange r{first < 0 ? 0 : first, first + window < size ? first + window : size};
  if (r.end < r.begin) r.end = r.begin;
  return r;
}

// The output positions o in [0, out) whose window [o * stride - pad, o * stride - pad + window)
// holds input position i: o * stride <= i + pad < o * stride + window.
DAGRAD_HD PoolRange pool_covering(std::int64_t i, std::int64_t stride, std::int64_t pad, std::int64_t window,
                                  std::int64_t out) {
  const std::int64_t shifted = i + pad;  // >= 0
  const std::int64_t low = shifted - window + 1;
  PoolRange r{low <= 0 ? 0 : (low + stride - 1) / stride, shifted / stride + 1};
  if (r.end > out) r.end = out;
  if (r.end < r.begin) r.end = r.begin;
  return r;
}

}  // namespace dagrad::cuda
