// ops::Pool2DGeometry as the CUDA pooling kernels' plain PoolIndex (host code; the tests use it too).
#pragma once

#include "dagrad/backends/cuda/pool_index.hpp"
#include "dagrad/ops/pooling_ops.hpp"

namespace dagrad::cuda {

inline PoolIndex pool_index_of(const ops::Pool2DGeometry& g) {
  PoolIndex p;
  p.nchw = g.nchw;
  p.batch = g.batch, p.rows = g.rows, p.cols = g.cols, p.depth = g.depth;
  p.window_rows = g.window_rows, p.window_cols = g.window_cols;
  p.stride_rows = g.stride_rows, p.stride_cols = g.stride_cols;
  p.out_rows = g.out_rows, p.out_cols = g.out_cols;
  p.pad_top = g.pad_top, p.pad_left = g.pad_left;
  return p;
}

}  // namespace dagrad::cuda
