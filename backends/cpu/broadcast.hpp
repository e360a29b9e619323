// Broadcast plans for the CPU backend: the output's dims with the element strides of up to two
// operands over them (0 along broadcast axes), adjacent dims merged, so that kernels walk rows of
// the innermost dim with plain strided loops. Used by the binary math ops, Equal and BroadcastTo.
#pragma once

#include <cstdint>
#include <vector>

#include "dagrad/core/shape.hpp"

namespace dagrad::cpu {

struct Broadcast {
  std::vector<std::int64_t> dims, sx, sy;

  // Element offsets of x and y at the start of output row `row` (all dims but the last).
  void row_offsets(std::int64_t row, std::int64_t* ox, std::int64_t* oy) const {
    std::int64_t rest = row, a = 0, b = 0;
    for (std::size_t i = dims.size() - 1; i-- > 0;) {
      const std::int64_t k = rest % dims[i];
      rest /= dims[i];
      a += k * sx[i];
      b += k * sy[i];
    }
    *ox = a;
    *oy = b;
  }
};

// x and y broadcast to out (numpy rules, already validated by the op's shape function).
inline Broadcast plan_broadcast(const Shape& out, const Shape& x, const Shape& y) {
  const int r = out.rank();
  std::vector<std::int64_t> dims(static_cast<std::size_t>(r)), sx(dims.size()), sy(dims.size());
  std::int64_t ax = 1, ay = 1;
  for (int a = r - 1; a >= 0; --a) {
    const int ix = a - (r - x.rank()), iy = a - (r - y.rank());
    const std::int64_t dx = ix >= 0 ? x[ix] : 1, dy = iy >= 0 ? y[iy] : 1;
    dims[static_cast<std::size_t>(a)] = out[a];
    sx[static_cast<std::size_t>(a)] = dx == 1 ? 0 : ax;
    sy[static_cast<std::size_t>(a)] = dy == 1 ? 0 : ay;
    ax *= dx;
    ay *= dy;
  }
  Broadcast b;
  for (std::size_t a = 0; a < dims.size(); ++a) {
    if (dims[a] == 1) continue;
    if (!b.dims.empty()) {
      // Merge with the previous dim when both operands step through them as one.
      const std::int64_t d = dims[a];
      const bool mx = b.sx.back() == sx[a] * d, my = b.sy.back() == sy[a] * d;
      if (mx && my) {
        b.dims.back() *= d;
        b.sx.back() = sx[a];
        b.sy.back() = sy[a];
        continue;
      }
    }
    b.dims.push_back(dims[a]);
    b.sx.push_back(sx[a]);
    b.sy.push_back(sy[a]);
  }
  if (b.dims.empty()) b = {{1}, {0}, {0}};
  return b;
}

}  // namespace dagrad::cpu
