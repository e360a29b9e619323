// The AMX-BF16 tile batch (interface: amx_kernels.hpp): c (m x n float32, up to 2 x 2 tiles of
// 16 x 16) loaded into tiles 0-3; per operand pair, a's row blocks into tiles 4-5 and b's column
// blocks into tiles 6-7 and one TDPBF16PS per (row block, column block); c stored back. Tiles are
// configured per call for its m and n (a tile of zero rows or columns may not be touched, hence
// the four variants) and released after it. Compiled with AMX flags for this file only and called
// only where cpu_info() reports AMX-BF16 with tile data granted.
#include <immintrin.h>

#include "dagrad/backends/cpu/amx_kernels.hpp"

namespace dagrad::cpu::amx {
namespace {

using i64 = long long;
using u32 = std::uint32_t;

// The 64-byte operand of LDTILECFG, palette 1.
struct alignas(64) TileConfig {
  std::uint8_t palette = 1, start_row = 0;
  std::uint8_t reserved[14] = {};
  std::uint16_t colsb[16] = {};
  std::uint8_t rows[16] = {};
};
static_assert(sizeof(TileConfig) == 64);

template <bool kLowerRows, bool kRightCols>
void batch_tiles(i64 m, i64 n, const AmxOperands* operands, i64 count, i64 ldb, float* c, i64 ldc) {
  const i64 m0 = m < 16 ? m : 16, n0 = n < 16 ? n : 16;
  TileConfig cfg;
  const auto set = [&](int tile, i64 rows, i64 bytes) {
    cfg.rows[tile] = static_cast<std::uint8_t>(rows);
    cfg.colsb[tile] = static_cast<std::uint16_t>(bytes);
  };
  set(0, m0, n0 * 4);
  set(4, m0, 64);
  set(6, 16, n0 * 4);
  if constexpr (kRightCols) set(1, m0, (n - 16) * 4), set(7, 16, (n - 16) * 4);
  if constexpr (kLowerRows) set(2, m - 16, n0 * 4), set(5, m - 16, 64);
  if constexpr (kLowerRows && kRightCols) set(3, m - 16, (n - 16) * 4);
  _tile_loadconfig(&cfg);
  const i64 sc = ldc * 4, sb = ldb * 4;  // strides in bytes
  _tile_loadd(0, c, sc);
  if constexpr (kRightCols) _tile_loadd(1, c + 16, sc);
  if constexpr (kLowerRows) _tile_loadd(2, c + 16 * ldc, sc);
  if constexpr (kLowerRows && kRightCols) _tile_loadd(3, c + 16 * ldc + 16, sc);
  for (i64 i = 0; i < count; ++i) {
    const AmxOperands& op = operands[i];
    _tile_loadd(4, op.a, op.lda * 2);
    _tile_loadd(6, op.b, sb);
    if constexpr (kRightCols) _tile_loadd(7, op.b + 16, sb);
    if constexpr (kLowerRows) _tile_loadd(5, op.a + 16 * op.lda, op.lda * 2);
    _tile_dpbf16ps(0, 4, 6);
    if constexpr (kRightCols) _tile_dpbf16ps(1, 4, 7);
    if constexpr (kLowerRows) _tile_dpbf16ps(2, 5, 6);
    if constexpr (kLowerRows && kRightCols) _tile_dpbf16ps(3, 5, 7);
  }
  _tile_stored(0, c, sc);
  if constexpr (kRightCols) _tile_stored(1, c + 16, sc);
  if constexpr (kLowerRows) _tile_stored(2, c + 16 * ldc, sc);
  if constexpr (kLowerRows && kRightCols) _tile_stored(3, c + 16 * ldc + 16, sc);
  _tile_release();
}

void batch(i64 m, i64 n, const AmxOperands* operands, i64 count, i64 ldb, float* c, i64 ldc) {
  if (m > 16)
    return n > 16 ? batch_tiles<true, true>(m, n, operands, count, ldb, c, ldc)
                  : batch_tiles<true, false>(m, n, operands, count, ldb, c, ldc);
  return n > 16 ? batch_tiles<false, true>(m, n, operands, count, ldb, c, ldc)
                : batch_tiles<false, false>(m, n, operands, count, ldb, c, ldc);
}

}  // namespace

extern const AmxKernels kernels{&batch};

}  // namespace dagrad::cpu::amx
