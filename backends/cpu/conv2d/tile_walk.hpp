// Small helpers the conv drivers share to walk their register tiles.
#pragma once

#include <algorithm>
#include <cstdint>

#include "dagrad/backends/cpu/cpu_info.hpp"

namespace dagrad::cpu {

// Pixels per block of an im2col or col2im GEMM: a quarter of L2 for the block's `width` floats a
// pixel, a multiple of `unit` pixels (at least one).
inline std::int64_t l2_block_pixels(std::int64_t width, std::int64_t unit) {
  const std::int64_t budget = std::max<std::int64_t>(cpu_info().l2_bytes, std::int64_t{256} << 10) / 4;
  return std::max(unit, budget / (std::max<std::int64_t>(width, 1) * std::int64_t{sizeof(float)}) / unit * unit);
}

// Calls tile(first, count) over `items` (pixels or channels) in tiles of nearly equal size, at
// most max_count each: 28 as 4 tiles of 7, not 3 of 8 and a thin one of 4, which holds too few
// accumulators to hide the FMA latency. items * tiles must fit int64 (callers' items are a strip's
// width or a task's channels).
template <class Tile>
void equal_tiles(std::int64_t items, std::int64_t max_count, const Tile& tile) {
  const std::int64_t tiles = (items + max_count - 1) / max_count;
  for (std::int64_t t = 0; t < tiles; ++t) {
    const std::int64_t first = items * t / tiles;
    tile(first, items * (t + 1) / tiles - first);
  }
}

// Asks for `bytes` from p on to be brought into L2, one request per 64-byte line, a tile ahead of
// the kernel: for rows that it reads once, straight from memory (1x1 filters), and for the output
// rows its stores would otherwise miss on.
inline void prefetch_to_l2(const void* p, std::int64_t bytes) {
  const char* c = static_cast<const char*>(p);
  for (std::int64_t b = 0; b < bytes; b += 64) __builtin_prefetch(c + b, 0, 2);
}

}  // namespace dagrad::cpu
