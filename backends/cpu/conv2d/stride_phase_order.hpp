// The input pixels of an image in stride-phase order, for the input gradients: the pixels of one
// phase (ih % stride_rows, iw % stride_cols) reach outputs through the same taps, so a register
// tile of them skips the taps that miss it instead of multiplying zero rows (with stride 2, three
// quarters of the work otherwise).
#pragma once

#include <algorithm>
#include <cstdint>

namespace dagrad::cpu {

// The pixels of an H x W image grouped by (ih % sh, iw % sw), row-major within a group, decoded in
// closed form (no table: no workspace, and no `ih += sh` that a stride near INT64_MAX would wrap).
// Along one axis of n positions and stride s, phase p < min(s, n) holds the positions p + s * i,
// i < (n - 1 - p) / s + 1: that is n / s + 1 of them for p < n % s, n / s for the others.
class PhaseAxis {
 public:
  PhaseAxis(std::int64_t n, std::int64_t s) : s_(s), base_(n / s), rem_(n % s) {}
  std::int64_t size(std::int64_t p) const { return base_ + (p < rem_ ? 1 : 0); }
  std::int64_t start(std::int64_t p) const { return p * base_ + std::min(p, rem_); }  // positions in phases before p
  std::int64_t phase_of(std::int64_t u) const {         // the phase holding the u-th position in phase order
    const std::int64_t long_part = rem_ * (base_ + 1);  // <= n
    return u < long_part ? u / (base_ + 1) : rem_ + (u - long_part) / base_;
  }
  std::int64_t position(std::int64_t p, std::int64_t i) const { return p + s_ * i; }  // i < size(p): at most n - 1

 private:
  std::int64_t s_, base_, rem_;
};

class StridePhaseOrder {
 public:
  StridePhaseOrder(std::int64_t H, std::int64_t W, std::int64_t sh, std::int64_t sw)
      : identity_(sh == 1 && sw == 1), W_(W), rows_(H, sh), cols_(W, sw) {}
  // Position q of the order: its pixel (ih * W + iw), and where it lies in its row of the phase
  // (the next position is `stride_cols` pixels on while column + 1 < columns).
  struct Place {
    std::int64_t pixel, column, columns;
  };
  Place place(std::int64_t q) const {
    if (identity_) return {q, q % W_, W_};
    const std::int64_t ph = rows_.phase_of(q / W_);  // a row phase's block holds size(ph) * W pixels
    const std::int64_t nh = rows_.size(ph), in_block = q - rows_.start(ph) * W_;
    const std::int64_t pw = cols_.phase_of(in_block / nh);  // a column phase's block holds nh * size(pw) pixels
    const std::int64_t nw = cols_.size(pw), in_phase = in_block - cols_.start(pw) * nh;
    return {rows_.position(ph, in_phase / nw) * W_ + cols_.position(pw, in_phase % nw), in_phase % nw, nw};
  }

 private:
  bool identity_;
  std::int64_t W_;
  PhaseAxis rows_, cols_;
};

}  // namespace dagrad::cpu
