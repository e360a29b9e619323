// Index arithmetic of the CUDA implicit-GEMM convolution kernels, shared by the kernels and the
// host tests. Each conv op is one GEMM per group, C[m, n] = sum_k A[m, k] * B[k, n], whose
// operands are gathered from the NHWC/NCHW activations and the HWIO filter on the fly:
//   Conv2D:               m = (n, oh, ow)   n = co  k = (kh, kw, ci)   A = input  B = filter
//   Conv2DBackpropInput:  m = (n, ih, iw)   n = ci  k = (kh, kw, co)   A = dy     B = filter
//   Conv2DBackpropFilter: m = (kh, kw, ci)  n = co  k = (n, oh, ow)    A = input  B = dy
// (ci, co are channels within the group). An offset of -1 means "zero" (padding, or a tap that
// no output position reads). All arithmetic is int64.
#pragma once

#include <cstdint>

#include "dagrad/backends/cuda/hd.hpp"

namespace dagrad::cuda {

enum class ConvKind : int { Forward, BackpropInput, BackpropFilter };

struct ConvGemm {
  ConvKind kind = ConvKind::Forward;
  bool nchw = false;
  std::int64_t batch = 0, in_rows = 0, in_cols = 0, in_depth = 0;
  std::int64_t filter_rows = 0, filter_cols = 0, group_in = 0, out_depth = 0, group_out = 0, groups = 1;
  std::int64_t out_rows = 0, out_cols = 0;
  std::int64_t stride_rows = 1, stride_cols = 1, dilation_rows = 1, dilation_cols = 1;
  std::int64_t pad_top = 0, pad_left = 0;
  // Element strides of the input (x) and output (y) activations: n, h, w, c.
  std::int64_t xs[4] = {}, ys[4] = {};
  // GEMM sizes per group.
  std::int64_t m = 0, n = 0, k = 0;
};

// Fills strides and GEMM sizes from the geometry fields.
inline void finish_conv_gemm(ConvGemm* p) {
  auto strides = [&](std::int64_t rows, std::int64_t cols, std::int64_t depth, std::int64_t* s) {
    if (!p->nchw) {
      s[3] = 1, s[2] = depth, s[1] = cols * depth, s[0] = rows * cols * depth;
    } else {
      s[2] = 1, s[1] = cols, s[3] = rows * cols, s[0] = depth * rows * cols;
    }
  };
  strides(p->in_rows, p->in_cols, p->in_depth, p->xs);
  strides(p->out_rows, p->out_cols, p->out_depth, p->ys);
  const std::int64_t taps = p->filter_rows * p->filter_cols;
  const std::int64_t positions_out = p->batch * p->out_rows * p->out_cols;
  switch (p->kind) {
    case ConvKind::Forward:
      p->m = positions_out, p->n = p->group_out, p->k = taps * p->group_in;
      break;
    case ConvKind::BackpropInput:
      p->m = p->batch * p->in_rows * p->in_cols, p->n = p->group_in, p->k = taps * p->group_out;
      break;
    case ConvKind::BackpropFilter:
      p->m = taps * p->group_in, p->n = p->group_out, p->k = positions_out;
      break;
  }
}

// Input element (n, h, w, channel c of `group`) or -1 outside the image.
DAGRAD_HD std::int64_t x_offset(const ConvGemm& p, std::int64_t group, std::int64_t b, std::int64_t h, std::int64_t w,
                                std::int64_t c) {
  if (h < 0 || h >= p.in_rows || w < 0 || w >= p.in_cols) return -1;
  return b * p.xs[0] + h * p.xs[1] + w * p.xs[2] + (group * p.group_in + c) * p.xs[3];
}

DAGRAD_HD std::int64_t y_offset(const ConvGemm& p, std::int64_t group, std::int64_t b, std::int64_t h, std::int64_t w,
                                std::int64_t c) {
  return b * p.ys[0] + h * p.ys[1] + w * p.ys[2] + (group * p.group_out + c) * p.ys[3];
}

DAGRAD_HD std::int64_t filter_offset(const ConvGemm& p, std::int64_t group, std::int64_t kh, std::int64_t kw,
                                     std::int64_t ci, std::int64_t co) {
  return ((kh * p.filter_cols + kw) * p.group_in + ci) * p.out_depth + group * p.group_out + co;
}

// The output index a backprop-input tap reads: (in + pad - tap * dilation) / stride when that is
// an exact, in-range quotient; else -1.
DAGRAD_HD std::int64_t source_position(std::int64_t in, std::int64_t pad, std::int64_t tap, std::int64_t dilation,
                                       std::int64_t stride, std::int64_t out_size) {
  const std::int64_t num = in + pad - tap * dilation;
  if (num < 0 || num % stride != 0) return -1;
  const std::int64_t out = num / stride;
  return out < out_size ? out : -1;
}

// A[row, col] of `group`'s GEMM: the element offset in the A tensor, or -1 for zero.
DAGRAD_HD std::int64_t a_offset(const ConvGemm& p, std::int64_t group, std::int64_t row, std::int64_t col) {
  switch (p.kind) {
    case ConvKind::Forward: {
      const std::int64_t ow = row % p.out_cols, t = row / p.out_cols;
      const std::int64_t oh = t % p.out_rows, b = t / p.out_rows;
      const std::int64_t ci = col % p.group_in, tap = col / p.group_in;
      const std::int64_t kw = tap % p.filter_cols, kh = tap / p.filter_cols;
      return x_offset(p, group, b, oh * p.stride_rows + kh * p.dilation_rows - p.pad_top,
                      ow * p.stride_cols + kw * p.dilation_cols - p.pad_left, ci);
    }
    case ConvKind::BackpropInput: {
      const std::int64_t iw = row % p.in_cols, t = row / p.in_cols;
      const std::int64_t ih = t % p.in_rows, b = t / p.in_rows;
      const std::int64_t co = col % p.group_out, tap = col / p.group_out;
      const std::int64_t kw = tap % p.filter_cols, kh = tap / p.filter_cols;
      const std::int64_t oh = source_position(ih, p.pad_top, kh, p.dilation_rows, p.stride_rows, p.out_rows);
      const std::int64_t ow = source_position(iw, p.pad_left, kw, p.dilation_cols, p.stride_cols, p.out_cols);
      if (oh < 0 || ow < 0) return -1;
      return y_offset(p, group, b, oh, ow, co);
    }
    case ConvKind::BackpropFilter: {
      const std::int64_t ci = row % p.group_in, tap = row / p.group_in;
      const std::int64_t kw = tap % p.filter_cols, kh = tap / p.filter_cols;
      const std::int64_t ow = col % p.out_cols, t = col / p.out_cols;
      const std::int64_t oh = t % p.out_rows, b = t / p.out_rows;
      return x_offset(p, group, b, oh * p.stride_rows + kh * p.dilation_rows - p.pad_top,
                      ow * p.stride_cols + kw * p.dilation_cols - p.pad_left, ci);
    }
  }
  return -1;
}

// B[row, col] of `group`'s GEMM (never zero-padded).
DAGRAD_HD std::int64_t b_offset(const ConvGemm& p, std::int64_t group, std::int64_t row, std::int64_t col) {
  switch (p.kind) {
    case ConvKind::Forward: {
      const std::int64_t ci = row % p.group_in, tap = row / p.group_in;
      return filter_offset(p, group, tap / p.filter_cols, tap % p.filter_cols, ci, col);
    }
    case ConvKind::BackpropInput: {
      const std::int64_t co = row % p.group_out, tap = row / p.group_out;
      return filter_offset(p, group, tap / p.filter_cols, tap % p.filter_cols, col, co);
    }
    case ConvKind::BackpropFilter: {
      const std::int64_t ow = row % p.out_cols, t = row / p.out_cols;
      return y_offset(p, group, t / p.out_rows, t % p.out_rows, ow, col);
    }
  }
  return -1;
}

// C[row, col] where C is a row-major matrix of the output's channels: the filter gradient (HWIO,
// whose row (kh, kw, ci) is the filter's row index), and in NHWC the Conv2D output and the input
// gradient (row = pixel).
DAGRAD_HD std::int64_t row_major_c_offset(const ConvGemm& p, std::int64_t group, std::int64_t row, std::int64_t col) {
  if (p.kind == ConvKind::BackpropInput) return row * p.in_depth + group * p.group_in + col;
  return row * p.out_depth + group * p.group_out + col;
}

// C[row, col]: where the result goes in the output tensor.
DAGRAD_HD std::int64_t c_offset(const ConvGemm& p, std::int64_t group, std::int64_t row, std::int64_t col) {
  switch (p.kind) {
    case ConvKind::Forward: {
      const std::int64_t ow = row % p.out_cols, t = row / p.out_cols;
      return y_offset(p, group, t / p.out_rows, t % p.out_rows, ow, col);
    }
    case ConvKind::BackpropInput: {
      const std::int64_t iw = row % p.in_cols, t = row / p.in_cols;
      return x_offset(p, group, t / p.in_rows, t % p.in_rows, iw, col);
    }
    case ConvKind::BackpropFilter:
      return row_major_c_offset(p, group, row, col);
  }
  return -1;
}

// Block tiling: a block computes a bm x bn tile of C, stepping through k in bk-wide slabs that
// its `threads` threads stage in shared memory; thread t loads slab elements t, t + threads, ...
struct TileShape {
  int bm, bn, bk, threads;
};
inline constexpr TileShape kSimtTile{64, 64, 16, 256};    // float32 / float64 on CUDA cores
inline constexpr TileShape kTensorTile{64, 64, 32, 128};  // half / bfloat16 on tensor cores (wmma)

// Slab element `e` of a rows x cols slab stored row-major: its row and column.
DAGRAD_HD void slab_coords(int e, int cols, int* row, int* col) {
  *row = e / cols;
  *col = e % cols;
}

// SIMT micro-tile: thread t owns rows (t / 16) + 16 * i and columns (t % 16) + 16 * j, i, j < 4,
// of the 64 x 64 block tile (strided so that a warp reads consecutive shared-memory columns).
inline constexpr int kSimtMicro = 4;
DAGRAD_HD int simt_row(int t, int i) { return t / 16 + 16 * i; }
DAGRAD_HD int simt_col(int t, int j) { return t % 16 + 16 * j; }

// Split-K: k is cut into `splits` ranges of whole slabs; split s covers [begin, end).
DAGRAD_HD void split_range(std::int64_t k, int bk, int splits, int s, std::int64_t* begin, std::int64_t* end) {
  const std::int64_t slabs = (k + bk - 1) / bk;
  const std::int64_t per = (slabs + splits - 1) / splits;
  const std::int64_t b = s * per * bk;
  const std::int64_t e = b + per * bk;
  *begin = b < k ? b : k;
  *end = e < k ? e : k;
}

// How many k-splits: enough blocks to fill the GPU (about two per SM) when the C tiles alone are
// too few, but at least 8 slabs per split so the combine pass stays cheap. A pure function of
// the shape and the SM count, so a given GPU always combines in the same order.
inline int choose_splits(std::int64_t tiles, std::int64_t k, int bk, int sm_count) {
  const std::int64_t wanted = 2 * static_cast<std::int64_t>(sm_count);
  if (tiles >= wanted) return 1;
  const std::int64_t by_fill = (wanted + tiles - 1) / tiles;
  const std::int64_t by_depth = ((k + bk - 1) / bk) / 8;
  std::int64_t s = by_fill < by_depth ? by_fill : by_depth;
  if (s > 64) s = 64;
  return s < 1 ? 1 : static_cast<int>(s);
}

}  // namespace dagrad::cuda
