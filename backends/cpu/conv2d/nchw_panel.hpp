// Per-task panels of the NCHW conv paths: zero-padded copies of the few activation rows one task
// reads, split by column phase (column mod stride), so that every tap of a strided, dilated,
// padded conv reads whole contiguous vectors and the micro-kernels need no bounds checks.
// Panels live in per-thread scratch reused across tasks and calls: on these machines touching
// fresh pages costs more than the copy.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "dagrad/backends/cpu/conv2d/int_division.hpp"

namespace dagrad::cpu::nchw {

using i64 = std::int64_t;

// Distinct row keys (n * height + h) a task reads; slot(key) = 1 + rank, slot 0 = the zero row.
class RowSlots {
 public:
  void reset() { keys_.clear(); }
  void request(i64 key) {
    if (key >= 0) keys_.push_back(key);
  }
  void finish() {
    std::sort(keys_.begin(), keys_.end());
    keys_.erase(std::unique(keys_.begin(), keys_.end()), keys_.end());
  }
  i64 slot(i64 key) const {
    if (key < 0) return 0;
    return 1 + (std::lower_bound(keys_.begin(), keys_.end(), key) - keys_.begin());
  }
  const std::vector<i64>& keys() const { return keys_; }
  i64 count() const { return static_cast<i64>(keys_.size()) + 1; }

 private:
  std::vector<i64> keys_;
};

// Layout [slot][channel][phase][m]:
//   at(s, c, q, m) = src[n][c0 + c][h][m * phases + q + offset]   (keys[s - 1] = n * height + h)
// and 0 where that column lies outside [0, width) or s = 0.
struct Panel {
  float* data = nullptr;
  i64 channels = 0, phases = 1, phase_len = 0;
  i64 channel_stride() const { return phases * phase_len; }
  i64 slot_stride() const { return channels * phases * phase_len; }
  const float* at(i64 slot, i64 c, i64 q, i64 m) const {
    return data + slot * slot_stride() + (c * phases + q) * phase_len + m;
  }
};

// Per-thread scratch of at least n elements (grows, never shrinks).
template <class T>
T* scratch(std::vector<T>& buffer, i64 n) {
  if (static_cast<i64>(buffer.size()) < n) buffer.resize(static_cast<std::size_t>(n));
  return buffer.data();
}

// Points `panel` at per-thread storage for `rows` and fills it from src [N][C][height][width].
inline void fill_panel(Panel& panel, std::vector<float>& storage, const RowSlots& rows, const float* src, i64 C,
                       i64 height, i64 width, i64 c0, i64 offset) {
  panel.data = scratch(storage, rows.count() * panel.slot_stride());
  std::fill_n(panel.data, panel.slot_stride(), 0.0f);
  const i64 P = panel.phases, L = panel.phase_len;
  for (std::size_t s = 0; s < rows.keys().size(); ++s) {
    const i64 key = rows.keys()[s], n = key / height, h = key % height;
    for (i64 c = 0; c < panel.channels; ++c) {
      const float* row = src + ((n * C + c0 + c) * height + h) * width;
      for (i64 q = 0; q < P; ++q) {
        float* dst = panel.data + (static_cast<i64>(s) + 1) * panel.slot_stride() + (c * P + q) * L;
        // Columns m * P + q + offset inside [0, width) for m in [lo, hi).
        const i64 lo = std::clamp<i64>(ceil_div(std::max<i64>(-(q + offset), 0), P), 0, L);
        const i64 hi = std::clamp<i64>(floor_div(width - 1 - q - offset, P) + 1, lo, L);
        std::fill(dst, dst + lo, 0.0f);
        if (P == 1) {
          if (hi > lo) std::copy(row + (lo + q + offset), row + (hi + q + offset), dst + lo);
        } else {
          for (i64 m = lo; m < hi; ++m) dst[m] = row[m * P + q + offset];
        }
        std::fill(dst + hi, dst + L, 0.0f);
      }
    }
  }
}

}  // namespace dagrad::cpu::nchw
