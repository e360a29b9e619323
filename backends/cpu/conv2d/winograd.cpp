// The float32 NHWC conv ops by Winograd's minimal filtering (winograd_matrices.hpp) on n x n
// tiles: stride 1, groups = 1, filters of 3 to 5 taps a side, dilations up to 4 (TileGrid). Per
// side F(7 - r, r) on n = 6 (F(4, 3), F(3, 4), F(2, 5): 36 products for what takes 144, 144 or
// 100 multiply-adds), or for 4 and 5 taps F(9 - r, r) on n = 8 (64 products for 400), which
// Conv2D and the input gradient take where their rounding allows it (tile_side).
//
// Conv2D and the input gradient are one correlation,
//   out[n][o + (i, j) d][0:K] = sum over taps (a, b) and channels c of
//                               in[n][o - pad + (a, b) d][c] * taps[a][b][c][0:K]
// (reads outside `in` are zeros): Conv2D with the filter, the input gradient with dy as `in` and
// the filter turned half a turn with its channels and filters swapped (pad' = (taps - 1) d - pad).
// Blocks of output tiles (sized so that their transformed tiles stay in L2) are the tasks: each
// transforms its input tiles (V = BT d B, channels side by side), multiplies V by the transformed
// filter (U = G g G^T) at each of the n^2 tile positions on the `rows` micro-kernel, and transforms
// the products back (AT M A) into the output.
// The filter gradient is the derivative of Conv2D's tiles with respect to U, then to g:
// M = sum over tiles of (AT^T dY AT) * (BT x B) on the `pixels` micro-kernel (in fixed chunks of
// tiles added in chunk order), and df = G^T M G once. Its matrices are those of Conv2D's F(m, r),
// whose entries stay small (F(r, m) with dy's tiles as the filter had 2^4 in AT, and 3x the error).
//
// Each output element is summed in an order fixed by the shapes alone. The transforms form every
// product, zeros included, so an Inf or NaN read anywhere in a tile makes outputs of that tile
// non-finite; the paths' finite rule then recomputes the call on the generic path.
#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <string_view>
#include <utility>
#include <vector>

#include <tbb/parallel_for.h>

#include "dagrad/backends/cpu/conv2d/epilogue.hpp"
#include "dagrad/backends/cpu/conv2d/kernels.hpp"
#include "dagrad/backends/cpu/conv2d/reduction_partials.hpp"
#include "dagrad/backends/cpu/conv2d/winograd_matrices.hpp"
#include "dagrad/backends/cpu/cpu_info.hpp"
#include "dagrad/backends/cpu/float_buffer.hpp"
#include "dagrad/backends/cpu/microkernels.hpp"
#include "dagrad/backends/cpu/transpose.hpp"
#include "dagrad/core/error.hpp"

namespace dagrad::cpu {
namespace {

using ops::Conv2DGeometry;
using i64 = std::int64_t;

constexpr int kMaxN = kMaxWinogradTile;
constexpr int kMaxPositions = kMaxN * kMaxN;
constexpr i64 kDefaultL2 = i64{1} << 20;
constexpr i64 kMaxBlock = 512;  // tiles per block at most (the pointer lists of the filter gradient)
// 256 rather than 64 tiles a block: 1.05-1.07x on train_cnn's second layer and the 3x3 layers of
// 64 to 256 channels (Zen 4), where the blocks then outgrow L2 (fewer passes over the sums).
constexpr i64 kMinFilterBlock = 256, kMinChunkTiles = 128;
// Dilations up to 4 a side (16 phases at most, each a grid of its own, so small grids waste more).
constexpr i64 kMaxDilation = 4;
// The filter gradient's tiles: on 8 x 8 (F(4, 5)) it erred by 1.1e-5 of the largest magnitude on
// train_cnn's second layer (its sums run over the batch's tiles), past the 1e-5 every path meets.
constexpr int kFilterGradientTile = 6;

i64 l2_bytes() { return cpu_info().l2_bytes > 0 ? cpu_info().l2_bytes : kDefaultL2; }

// A matrix of winograd_matrices in float32, rows x cols.
struct FloatMatrix {
  int rows = 0, cols = 0;
  std::array<float, kMaxPositions> v{};
};
FloatMatrix to_float(const std::array<double, kMaxPositions>& d, int rows, int cols) {
  FloatMatrix f{rows, cols, {}};
  for (int i = 0; i < rows * cols; ++i) f.v[i] = static_cast<float>(d[i]);
  return f;
}

// One axis of a tiling: F(m, r) on n points, and the matrices it transforms with.
struct Axis {
  int m, r, n;
  FloatMatrix output, filter;  // AT (m x n), G (n x r); BT is the micro-kernels' winograd_input
};
Axis axis(int n, int r) {
  const WinogradMatrices w = winograd_matrices(n + 1 - r, r);
  return {w.m, r, n, to_float(w.output, w.m, n), to_float(w.filter, n, r)};
}

FloatMatrix transposed(const FloatMatrix& a) {
  FloatMatrix t{a.cols, a.rows, {}};
  for (int i = 0; i < a.rows; ++i)
    for (int j = 0; j < a.cols; ++j) t.v[j * a.rows + i] = a.v[i * a.cols + j];
  return t;
}

// out = L X R^T for every channel: the two axes' matrices on the tile's rows and columns.
void transform(const MicroKernels& mk, const FloatMatrix& l, const FloatMatrix& r, const float* const* in,
               float* const* out, i64 channels) {
  DAGRAD_REQUIRE_CODE(transform_supported(l.rows, r.rows, l.cols, r.cols), Internal, "winograd: no ", l.rows, "x",
                      r.rows, " from ", l.cols, "x", r.cols, " tile transform");
  mk.transform(l.rows, r.rows, l.cols, r.cols, l.v.data(), r.v.data(), in, out, channels);
}

// out = AT M A, by pairs of points on 8 x 8 tiles (winograd_output).
void back_transform(const MicroKernels& mk, const Axis& rows, const Axis& cols, const float* const* in,
                    float* const* out, i64 channels) {
  const auto paired = [](const Axis& a) { return a.n == 8 && a.m >= 4 && a.m <= 6; };
  if (paired(rows) && paired(cols)) return mk.winograd_output(rows.m, cols.m, in, out, channels);
  transform(mk, rows.output, cols.output, in, out, channels);
}

// Rows of a register tile for products `columns` wide: taller where the columns take few registers.
i64 register_rows(const MicroKernels& mk, i64 columns) { return std::min<i64>(kMaxRows, mk.grid_max_rows(columns)); }

// Tiles per block: mr-multiples whose transformed tiles (of `depth` floats at each of the
// `positions`) fill at most half of L2.
i64 block_tiles(i64 depth, i64 mr, i64 positions) {
  const i64 fit = l2_bytes() / 2 / (positions * depth * static_cast<i64>(sizeof(float)));
  return std::clamp<i64>(fit / mr * mr, mr, kMaxBlock);
}

// The output tiles of a call, numbered image by image. A dilation d splits each axis into d
// phases (outputs o = phase + j d), each of them an undilated correlation on its own grid (the
// inputs phase - pad + (j + a) d): a phase is a grid of m x m tiles of its outputs, and a tile's
// output (i, j) and input (a, b) lie d apart. Without dilation there is one phase.
class TileGrid {
 public:
  struct Tile {
    i64 image, row, col;  // its first output
  };
  TileGrid(i64 batch, i64 out_rows, i64 out_cols, i64 m_rows, i64 m_cols, i64 dilation_rows, i64 dilation_cols)
      : m_rows_(m_rows), m_cols_(m_cols), dilation_rows_(dilation_rows), dilation_cols_(dilation_cols) {
    const auto tiles = [](i64 outputs, i64 phase, i64 d, i64 m) {
      const i64 count = phase < outputs ? (outputs - phase + d - 1) / d : 0;
      return (count + m - 1) / m;
    };
    for (i64 ph = 0; ph < dilation_rows; ++ph)
      for (i64 pw = 0; pw < dilation_cols; ++pw) {
        const i64 down = tiles(out_rows, ph, dilation_rows, m_rows),
                  across = tiles(out_cols, pw, dilation_cols, m_cols);
        if (down * across == 0) continue;
        phases_.push_back({ph, pw, across, per_image_});
        per_image_ += down * across;
      }
    count_ = batch * per_image_;
  }
  i64 count() const { return count_; }
  Tile at(i64 tile) const {
    const i64 image = tile / per_image_, local = tile % per_image_;
    auto phase = phases_.begin();
    while (phase + 1 != phases_.end() && (phase + 1)->first <= local) ++phase;
    const i64 k = local - phase->first;
    return {image, phase->row + k / phase->across * m_rows_ * dilation_rows_,
            phase->col + k % phase->across * m_cols_ * dilation_cols_};
  }

 private:
  struct Phase {
    i64 row, col, across, first;  // its first output, tiles across, its first tile in the image
  };
  i64 m_rows_, m_cols_, dilation_rows_, dilation_cols_;
  std::vector<Phase> phases_;  // at most kMaxDilation^2
  i64 per_image_ = 0, count_ = 0;
};

// Pointers to rows x cols pixels of an NHWC image from (top, left), `step` apart; `zeros` (depth
// zeros) outside it: the transforms then load without a branch.
struct Window {
  i64 top, left, step_rows, step_cols;
};
void window(const float* image, i64 in_rows, i64 in_cols, i64 depth, const Window& at, int rows, int cols,
            const float* zeros, const float** out) {
  for (int a = 0; a < rows; ++a)
    for (int b = 0; b < cols; ++b) {
      const i64 h = at.top + a * at.step_rows, w = at.left + b * at.step_cols;
      out[a * cols + b] = h >= 0 && h < in_rows && w >= 0 && w < in_cols ? image + (h * in_cols + w) * depth : zeros;
    }
}

// BT d B of the n x n input tile at `at` into v (n^2 x depth floats, position-major).
void input_tile(const MicroKernels& mk, int n, const float* image, i64 in_rows, i64 in_cols, i64 depth,
                const Window& at, const float* zeros, float* v) {
  const float* pin[kMaxPositions];
  float* pout[kMaxPositions];
  window(image, in_rows, in_cols, depth, at, n, n, zeros, pin);
  for (int q = 0; q < n * n; ++q) pout[q] = v + q * depth;
  mk.winograd_input(n, pin, pout, depth);
}

FloatBuffer zeroed(i64 count) {
  FloatBuffer z(count);
  std::fill_n(z.data(), count, 0.0f);
  return z;
}

// The correlation of Conv2D and the input gradient (the file's comment).
struct Correlation {
  i64 batch, in_rows, in_cols, in_depth;
  i64 out_rows, out_cols, out_depth;
  i64 pad_top, pad_left, dilation_rows, dilation_cols;
  int taps_rows, taps_cols;
};

// 8 x 8 tiles round more (their matrices hold up to 2^(m - 1), and BT 21/4): measured against
// float64 on uniform data, F(4, 5) errs by 5 to 7e-6 of the largest magnitude on sums over 32 to 64
// channels, 8.5e-6 over 96 and 1.1e-5 over 128, past the 1e-5 every conv path meets, where 6 x 6
// tiles err by 1 to 4e-6 over 16 to 512 channels. So 8 only where the sum runs over at most
// kMaxDeepTileDepth channels, every axis has 4 or 5 taps (F(6, 3)'s 2^5 erred more), and the
// outputs (with the tiles' overhang) take at least a quarter fewer products than on 6 x 6: 5 taps
// on 14 x 14 outputs take 16 tiles of 64 against 49 of 36.
constexpr i64 kMaxDeepTileDepth = 64;
int tile_side(const Correlation& p) {
  if (p.in_depth > kMaxDeepTileDepth || std::min(p.taps_rows, p.taps_cols) < 4) return 6;
  const auto products = [&](int n) {
    return TileGrid(1, p.out_rows, p.out_cols, n + 1 - p.taps_rows, n + 1 - p.taps_cols, p.dilation_rows,
                    p.dilation_cols)
               .count() *
           n * n;
  };
  return 4 * products(kMaxN) <= 3 * products(6) ? kMaxN : 6;
}

// U[pos][c][0:K] = (G g G^T)[pos] for the taps g[a][b][c][0:K].
FloatBuffer transformed_taps(const MicroKernels& mk, const Axis& rows, const Axis& cols, const float* taps, i64 depth,
                             i64 filters) {
  const int positions = rows.n * cols.n;
  FloatBuffer u(positions * depth * filters);
  tbb::parallel_for(i64{0}, depth, [&](i64 c) {
    const float* in[kMaxPositions];
    float* out[kMaxPositions];
    for (int t = 0; t < rows.r * cols.r; ++t) in[t] = taps + (t * depth + c) * filters;
    for (int p = 0; p < positions; ++p) out[p] = u.data() + (p * depth + c) * filters;
    transform(mk, rows.filter, cols.filter, in, out, filters);
  });
  return u;
}

// Returns whether every output was finite before the epilogue (true without one).
bool correlate(const Correlation& p, const float* in, const float* taps, float* out,
               const ConvEpilogue* epilogue = nullptr) {
  const MicroKernels& mk = micro_kernels();
  const int n = tile_side(p);
  const int positions = n * n;
  const Axis rows = axis(n, p.taps_rows), cols = axis(n, p.taps_cols);
  const i64 C = p.in_depth, K = p.out_depth, mr = register_rows(mk, K);
  const FloatBuffer u = transformed_taps(mk, rows, cols, taps, C, K);
  const TileGrid tiles(p.batch, p.out_rows, p.out_cols, rows.m, cols.m, p.dilation_rows, p.dilation_cols);
  const i64 block = block_tiles(C + K, mr, positions);
  const FloatBuffer zeros = zeroed(C);
  std::atomic<bool> finite{true};
  tbb::parallel_for(i64{0}, (tiles.count() + block - 1) / block, [&](i64 task) {
    // V (block x n^2 x C), M (block x n^2 x K), and a row that takes the outputs of tiles that
    // overhang the image; from the caching allocator, as every workspace here (no fresh pages).
    const FloatBuffer scratch(positions * block * (C + K) + K);
    float* v = scratch.data();
    float* m = v + positions * block * C;
    float* spill = m + positions * block * K;
    const i64 t0 = task * block, count = std::min(block, tiles.count() - t0);
    TileGrid::Tile at[kMaxBlock];
    for (i64 t = 0; t < count; ++t) {
      at[t] = tiles.at(t0 + t);
      input_tile(mk, n, in + at[t].image * p.in_rows * p.in_cols * C, p.in_rows, p.in_cols, C,
                 {at[t].row - p.pad_top, at[t].col - p.pad_left, p.dilation_rows, p.dilation_cols}, zeros.data(),
                 v + t * positions * C);
    }
    const float* a[kMaxRows];
    float* c[kMaxRows];
    for (int q = 0; q < positions; ++q) {
      const float* uq = u.data() + q * C * K;
      for (i64 r0 = 0; r0 < count; r0 += mr) {
        const int nr = static_cast<int>(std::min(mr, count - r0));
        for (int r = 0; r < nr; ++r) {
          a[r] = v + ((r0 + r) * positions + q) * C;
          c[r] = m + ((r0 + r) * positions + q) * K;
        }
        mk.rows(nr, K, a, 0, &uq, 1, C, K, c, 0, false);
      }
    }
    const float* pin[kMaxPositions];
    float* pout[kMaxPositions];
    for (i64 t = 0; t < count; ++t) {
      const TileGrid::Tile& o = at[t];
      for (int q = 0; q < positions; ++q) pin[q] = m + (t * positions + q) * K;
      for (int i = 0; i < rows.m; ++i)
        for (int j = 0; j < cols.m; ++j) {
          const i64 oh = o.row + i * p.dilation_rows, ow = o.col + j * p.dilation_cols;
          pout[i * cols.m + j] =
              oh < p.out_rows && ow < p.out_cols ? out + ((o.image * p.out_rows + oh) * p.out_cols + ow) * K : spill;
        }
      back_transform(mk, rows, cols, pin, pout, K);
      if (epilogue == nullptr) continue;
      // On each run of adjacent written pixels (a tile row without dilation).
      bool tile_finite = true;
      for (int q = 0; q < rows.m * cols.m;) {
        int run = 1;
        while (q + run < rows.m * cols.m && (q + run) % cols.m != 0 && pout[q + run] == pout[q] + run * K) ++run;
        if (pout[q] != spill) tile_finite &= apply_epilogue(*epilogue, pout[q], run, K);
        q += run;
      }
      if (!tile_finite) finite.store(false, std::memory_order_relaxed);
    }
  });
  return finite.load();
}

// Conv2D's correlation, or the input gradient's: dx[i] = sum over taps k of f[k] dy[i + pad - k d],
// with a = R - 1 - k, dy as the input and pad' = (R - 1) d - pad.
Correlation correlation_of(const Conv2DGeometry& g, bool input_gradient) {
  Correlation p{g.batch,
                g.in_rows,
                g.in_cols,
                g.in_depth,
                g.out_rows,
                g.out_cols,
                g.out_depth,
                g.pad_top,
                g.pad_left,
                g.dilation_rows,
                g.dilation_cols,
                static_cast<int>(g.filter_rows),
                static_cast<int>(g.filter_cols)};
  if (input_gradient) {
    std::swap(p.in_rows, p.out_rows);
    std::swap(p.in_cols, p.out_cols);
    std::swap(p.in_depth, p.out_depth);
    p.pad_top = (g.filter_rows - 1) * g.dilation_rows - g.pad_top;
    p.pad_left = (g.filter_cols - 1) * g.dilation_cols - g.pad_left;
  }
  return p;
}

}  // namespace

bool conv2d_winograd_applies(const Conv2DGeometry& g) {
  const auto taps_ok = [](i64 taps) { return taps >= 3 && taps <= 5; };
  // The transformed filter at one tile position stays within a quarter of L2 while its blocks of
  // tiles stream past it (the filter gradient's partial sums are as large).
  const double filter_position_bytes = static_cast<double>(g.in_depth) * static_cast<double>(g.out_depth) * 4;
  return g.data_format == ops::DataFormat::NHWC && g.groups == 1 && g.stride_rows == 1 && g.stride_cols == 1 &&
         g.dilation_rows <= kMaxDilation && g.dilation_cols <= kMaxDilation && taps_ok(g.filter_rows) &&
         taps_ok(g.filter_cols) && std::min(g.in_depth, g.out_depth) >= 16 &&
         filter_position_bytes <= static_cast<double>(l2_bytes()) / 4;
}

bool conv2d_winograd_by_default() {
  const char* value = std::getenv("DAGRAD_CONV_WINOGRAD");
  if (value == nullptr) return true;
  const std::string_view v(value);
  if (v != "0" && v != "1") invalid_argument("DAGRAD_CONV_WINOGRAD: '", v, "' is not 0 or 1");
  return v == "1";
}

int conv2d_winograd_tile(const Conv2DGeometry& g, bool backprop_input) {
  return tile_side(correlation_of(g, backprop_input));
}

void conv2d_forward_winograd(const Conv2DGeometry& g, const float* x, const float* f, float* y) {
  correlate(correlation_of(g, false), x, f, y);
}

bool conv2d_forward_winograd_fused(const Conv2DGeometry& g, const float* x, const float* f, float* y,
                                   const ConvEpilogue& epilogue) {
  return correlate(correlation_of(g, false), x, f, y, &epilogue);
}

void conv2d_backprop_input_winograd(const Conv2DGeometry& g, const float* f, const float* dy, float* dx) {
  // The filter turned half a turn, channels and filters swapped: t[a][b][k][c] = f[R-1-a][S-1-b][c][k].
  const i64 R = g.filter_rows, S = g.filter_cols, C = g.in_depth, K = g.out_depth;
  FloatBuffer turned(R * S * C * K);
  for (i64 tap = 0; tap < R * S; ++tap)
    transpose_images(f + (R * S - 1 - tap) * C * K, 1, C, K, turned.data() + tap * K * C);
  correlate(correlation_of(g, true), dy, turned.data(), dx);
}

void conv2d_backprop_filter_winograd(const Conv2DGeometry& g, const float* x, const float* dy, float* df) {
  const MicroKernels& mk = micro_kernels();
  const int R = static_cast<int>(g.filter_rows), S = static_cast<int>(g.filter_cols);
  // Conv2D's F(n + 1 - taps, taps) per axis, differentiated: its tiles, dy's tiles transformed by
  // AT^T (winograd_dy, on 6 points), and G^T on the sums.
  static_assert(kFilterGradientTile == 6);
  const int n = kFilterGradientTile, positions = n * n;
  const Axis rows = axis(n, R), cols = axis(n, S);
  const FloatMatrix gt_rows = transposed(rows.filter), gt_cols = transposed(cols.filter);
  const i64 C = g.in_depth, K = g.out_depth, H = g.in_rows, W = g.in_cols, mr = register_rows(mk, K);
  const TileGrid tiles(g.batch, g.out_rows, g.out_cols, rows.m, cols.m, g.dilation_rows, g.dilation_cols);
  // Each block of tiles reads and writes all n^2 x C x K partial sums: blocks of at least
  // kMinFilterBlock tiles (and chunks of at least kMinChunkTiles) amortise them where the filter is
  // large, no larger than a chunk. The kernel adds tiles in order whatever the blocks: the same bits.
  const i64 msize = positions * C * K;
  const i64 chunks = filter_reduction_chunks((tiles.count() + kMinChunkTiles - 1) / kMinChunkTiles, 1,
                                             msize * static_cast<i64>(sizeof(float)));
  const i64 block = std::min(std::max(block_tiles(C + K, mr, positions), kMinFilterBlock),
                             std::max<i64>((tiles.count() + chunks - 1) / chunks, 1));
  const ReductionPartials<float> partial(chunks, msize);
  const FloatBuffer zeros = zeroed(std::max(C, K));
  tbb::parallel_for(i64{0}, chunks, [&](i64 chunk) {
    float* sums = partial.chunk(chunk);
    std::fill_n(sums, msize, 0.0f);
    const FloatBuffer scratch(positions * block * (C + K));
    float* v = scratch.data();             // block x n^2 x C: transformed input tiles
    float* w = v + positions * block * C;  // block x n^2 x K: transformed dy tiles
    const float* pin[kMaxPositions];
    float* pout[kMaxPositions];
    const float* xs[kMaxBlock];
    const float* ys[kMaxBlock];
    const i64 end = tiles.count() * (chunk + 1) / chunks;
    for (i64 t0 = tiles.count() * chunk / chunks; t0 < end; t0 += block) {
      const i64 count = std::min(block, end - t0);
      for (i64 t = 0; t < count; ++t) {
        const TileGrid::Tile o = tiles.at(t0 + t);
        input_tile(mk, n, x + o.image * H * W * C, H, W, C,
                   {o.row - g.pad_top, o.col - g.pad_left, g.dilation_rows, g.dilation_cols}, zeros.data(),
                   v + t * positions * C);
        window(dy + o.image * g.out_rows * g.out_cols * K, g.out_rows, g.out_cols, K,
               {o.row, o.col, g.dilation_rows, g.dilation_cols}, rows.m, cols.m, zeros.data(), pin);
        for (int q = 0; q < positions; ++q) pout[q] = w + (t * positions + q) * K;
        mk.winograd_dy(rows.m, cols.m, pin, pout, K);
      }
      for (int q = 0; q < positions; ++q) {
        for (i64 t = 0; t < count; ++t) {
          xs[t] = v + (t * positions + q) * C;
          ys[t] = w + (t * positions + q) * K;
        }
        for (i64 c0 = 0; c0 < C; c0 += mr) {
          const int nr = static_cast<int>(std::min(mr, C - c0));
          mk.pixels(nr, K, xs, c0, ys, 0, count, sums + (q * C + c0) * K, K);
        }
      }
    }
  });
  float* total = partial.chunk(0);
  partial.sum_to(total);
  tbb::parallel_for(i64{0}, C, [&](i64 c) {
    const float* pin[kMaxPositions];
    float* pout[kMaxPositions];
    for (int q = 0; q < positions; ++q) pin[q] = total + (q * C + c) * K;
    for (int t = 0; t < R * S; ++t) pout[t] = df + (t * C + c) * K;
    transform(mk, gt_rows, gt_cols, pin, pout, K);
  });
}

}  // namespace dagrad::cpu
