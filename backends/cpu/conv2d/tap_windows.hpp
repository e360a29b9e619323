// Where the register tiles of the implicit-GEMM conv paths (float32: forward_input_nhwc_fast.cpp;
// native bfloat16: forward_input_bf16_native.cpp) find each pixel's rows, tap by tap, with no
// im2col. A tile's pixels are decoded once (locate: divisions), then each tap's row is a bounds
// check and an offset (source); a pixel whose window lies wholly inside reads every tap at a fixed
// distance from its own origin (interior, delta), with no check at all. Measured: the per-tap
// decoding took a third of a bfloat16 56x56x64 input gradient, the checks 15% of a float32
// 14x14x32 Conv2D.
#pragma once

#include <cstdint>
#include <vector>

#include "dagrad/backends/cpu/conv2d/stride_phase_order.hpp"
#include "dagrad/ops/conv_geometry.hpp"

namespace dagrad::cpu {

// A pixel of a tile: its output row (an index into the output's pixels) and where its window is.
struct Window {
  std::int64_t pixel;
  std::int64_t image_row;  // n times the rows of the image it reads
  // Conv2D: oh * stride - pad. Input gradient: (ih + pad) / stride, its remainder in the phases.
  std::int64_t row, col;
  std::int64_t row_phase = 0, col_phase = 0;
};

// Each tap's offset inside the window: kh * dilation_rows and kw * dilation_cols.
struct TapOffsets {
  std::vector<std::int64_t> rows, cols;
  explicit TapOffsets(const ops::Conv2DGeometry& g) {
    for (std::int64_t kh = 0; kh < g.filter_rows; ++kh)
      for (std::int64_t kw = 0; kw < g.filter_cols; ++kw) {
        rows.push_back(kh * g.dilation_rows);
        cols.push_back(kw * g.dilation_cols);
      }
  }
  std::int64_t size() const { return static_cast<std::int64_t>(rows.size()); }
};

// Conv2D: output pixel p reads the row of `channels` values at input pixel (row + rows[t], col + cols[t])
// of x (element type T), from channel0 on.
template <class T>
class ForwardWindows {
 public:
  ForwardWindows(const ops::Conv2DGeometry& g, const T* x, std::int64_t channel0) : g_(g), tap_(g), x_(x + channel0) {
    const std::int64_t reach_rows = tap_.rows.back(), reach_cols = tap_.cols.back();
    if (reach_rows < g.in_rows && reach_cols < g.in_cols)  // some window fits: each offset is below H * W * C
      for (std::int64_t t = 0; t < tap_.size(); ++t)
        delta_.push_back((tap_.rows[t] * g.in_cols + tap_.cols[t]) * g.in_depth);
    last_row_ = g.in_rows - 1 - reach_rows;
    last_col_ = g.in_cols - 1 - reach_cols;
  }
  std::int64_t taps() const { return tap_.size(); }
  Window locate(std::int64_t p) const {
    const std::int64_t per_image = g_.out_rows * g_.out_cols;
    const std::int64_t n = p / per_image, oh = p % per_image / g_.out_cols, ow = p % g_.out_cols;
    return {p, n * g_.in_rows, oh * g_.stride_rows - g_.pad_top, ow * g_.stride_cols - g_.pad_left};
  }
  // Pixels p0 .. p0 + count - 1: along an output row each is the last one stride columns on.
  void locate_run(std::int64_t p0, std::int64_t count, Window* win) const {
    std::int64_t ow = 0;
    for (std::int64_t r = 0; r < count; ++r) {
      if (r > 0 && ++ow < g_.out_cols) {
        win[r] = win[r - 1];
        win[r].pixel += 1;
        win[r].col += g_.stride_cols;
      } else {
        win[r] = locate(p0 + r);
        ow = (p0 + r) % g_.out_cols;
      }
    }
  }
  const T* source(const Window& w, std::int64_t t) const {
    const std::int64_t ih = w.row + tap_.rows[t], iw = w.col + tap_.cols[t];
    if (ih < 0 || ih >= g_.in_rows || iw < 0 || iw >= g_.in_cols) return nullptr;
    return x_ + ((w.image_row + ih) * g_.in_cols + iw) * g_.in_depth;
  }
  // The window's corner where it lies wholly inside the image, else nullptr.
  const T* interior(const Window& w) const {
    if (w.row < 0 || w.row > last_row_ || w.col < 0 || w.col > last_col_) return nullptr;
    return x_ + ((w.image_row + w.row) * g_.in_cols + w.col) * g_.in_depth;
  }
  std::int64_t delta(std::int64_t t) const { return delta_[static_cast<std::size_t>(t)]; }

 private:
  const ops::Conv2DGeometry& g_;
  TapOffsets tap_;
  const T* x_;
  std::vector<std::int64_t> delta_;
  std::int64_t last_row_, last_col_;
};

// Input gradient: input pixel q of the stride-phase order reads, through tap t, the row of dy
// (element type T, from filter k0 on) at the output position (ih + pad - rows[t]) / stride,
// (iw + pad - cols[t]) / stride where both divide evenly and fall inside. Each tap's offsets are
// split by the strides once, and each pixel's position once (locate), so that a tap's check is a
// comparison of remainders and a subtraction of quotients: the divisions per tap and pixel took a
// twentieth of a 3x3 stride-2 input gradient.
template <class T>
class InputWindows {
 public:
  InputWindows(const ops::Conv2DGeometry& g, const T* dy, std::int64_t k0)
      : g_(g), tap_(g), dy_(dy + k0), order_(g.in_rows, g.in_cols, g.stride_rows, g.stride_cols) {
    const std::int64_t reach_rows = tap_.rows.back(), reach_cols = tap_.cols.back();
    unit_strides_ = g.stride_rows == 1 && g.stride_cols == 1;
    if (unit_strides_ && reach_rows < g.out_rows && reach_cols < g.out_cols)  // then below OH * OW * K
      for (std::int64_t t = 0; t < tap_.size(); ++t)
        delta_.push_back(-(tap_.rows[t] * g.out_cols + tap_.cols[t]) * g.out_depth);
    for (std::int64_t t = 0; t < tap_.size(); ++t) {
      tap_rows_.push_back(Split{tap_.rows[t] / g.stride_rows, tap_.rows[t] % g.stride_rows});
      tap_cols_.push_back(Split{tap_.cols[t] / g.stride_cols, tap_.cols[t] % g.stride_cols});
    }
  }
  std::int64_t taps() const { return tap_.size(); }
  Window locate(std::int64_t q) const { return locate(q, order_.place(q % (g_.in_rows * g_.in_cols))); }
  // Positions q0 .. q0 + count - 1: along a row of a phase each is the last one stride columns on
  // (the same remainders, the quotient one more), with no division.
  void locate_run(std::int64_t q0, std::int64_t count, Window* win) const {
    const std::int64_t per_image = g_.in_rows * g_.in_cols;
    StridePhaseOrder::Place place{};
    for (std::int64_t r = 0; r < count; ++r) {
      const std::int64_t q = q0 + r;
      if (r > 0 && q % per_image != 0 && ++place.column < place.columns) {
        win[r] = win[r - 1];
        win[r].pixel += g_.stride_cols;
        win[r].col += 1;
      } else {
        place = order_.place(q % per_image);
        win[r] = locate(q, place);
      }
    }
  }
  const T* source(const Window& w, std::int64_t t) const {
    const Split& tr = tap_rows_[static_cast<std::size_t>(t)];
    const Split& tc = tap_cols_[static_cast<std::size_t>(t)];
    if (tr.remainder != w.row_phase || tc.remainder != w.col_phase) return nullptr;
    const std::int64_t oh = w.row - tr.quotient, ow = w.col - tc.quotient;
    if (oh < 0 || ow < 0 || oh >= g_.out_rows || ow >= g_.out_cols) return nullptr;
    return dy_ + ((w.image_row + oh) * g_.out_cols + ow) * g_.out_depth;
  }
  // At stride 1, the dy row at (ih + pad_top, iw + pad_left) where every tap reaches an output.
  const T* interior(const Window& w) const {
    const std::int64_t reach_rows = tap_.rows.back(), reach_cols = tap_.cols.back();
    if (!unit_strides_ || w.row < reach_rows || w.row >= g_.out_rows || w.col < reach_cols || w.col >= g_.out_cols)
      return nullptr;
    return dy_ + ((w.image_row + w.row) * g_.out_cols + w.col) * g_.out_depth;
  }
  std::int64_t delta(std::int64_t t) const { return delta_[static_cast<std::size_t>(t)]; }

 private:
  Window locate(std::int64_t q, const StridePhaseOrder::Place& place) const {
    const std::int64_t per_image = g_.in_rows * g_.in_cols, pix = place.pixel;
    const std::int64_t row = pix / g_.in_cols + g_.pad_top, col = pix % g_.in_cols + g_.pad_left;
    return {q / per_image * per_image + pix,
            q / per_image * g_.out_rows,
            row / g_.stride_rows,
            col / g_.stride_cols,
            row % g_.stride_rows,
            col % g_.stride_cols};
  }

  const ops::Conv2DGeometry& g_;
  TapOffsets tap_;
  const T* dy_;
  StridePhaseOrder order_;
  bool unit_strides_;
  std::vector<std::int64_t> delta_;
  struct Split {
    std::int64_t quotient, remainder;  // of a tap's offset by the stride
  };
  std::vector<Split> tap_rows_, tap_cols_;
};

// One tile's rows for the rows kernels: the taps that reach real rows for at least one of its
// pixels go to tap_list (all of them where a pixel is interior), and a[u * rows + r] is pixel r's
// row through the u-th of them (`zeros` where it reaches none). Returns their count.
template <class T, class Windows>
std::int64_t tile_rows(const Windows& windows, const Window* win, std::int64_t rows, const T* zeros, const T** a,
                       std::int64_t* tap_list) {
  constexpr int kMaxTileRows = 16;
  const T* origin[kMaxTileRows];
  bool any_interior = false;
  for (std::int64_t r = 0; r < rows; ++r) any_interior |= (origin[r] = windows.interior(win[r])) != nullptr;
  std::int64_t used = 0;
  for (std::int64_t t = 0; t < windows.taps(); ++t) {
    bool any = any_interior;
    const T** at = a + used * rows;
    for (std::int64_t r = 0; r < rows; ++r) {
      const T* src = origin[r] ? origin[r] + windows.delta(t) : windows.source(win[r], t);
      any |= src != nullptr;
      at[r] = src ? src : zeros;
    }
    if (any) tap_list[used++] = t;
  }
  return used;
}

}  // namespace dagrad::cpu
