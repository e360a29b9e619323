// The filter gradient (NHWC or NCHW) of small-channel layers (the whole filter gradient is a few
// register tiles tall: first layers with C = 1 or 3): df[r][k] = sum_p x_r[p] * dy[p][k].
//
// Each output row's window rows are copied, zero-padded, into a strip of filter_rows input rows
// of padded width (float32 blocks whose windows overlap share one slice of input rows per image:
// FloatBlock); on a strip every tap of every pixel is at a fixed offset from the pixel's
// origin, so a grid micro-kernel walks a whole block of output rows with no per-pixel
// bookkeeping, and its tiles hold up to 12 (tap, channel) rows. Copying costs KH * C values per
// pixel (stride_rows * C on slices) against 2 * KH * KW * C * K flops. NCHW x is read straight
// into the (channel-innermost) strips and each block's dy rows are transposed in cache, so NCHW
// needs no slab transposes here.
// Two forms of a block share the walk:
//   float32 (FloatBlock): half and bfloat16 are widened while strips and dy blocks are copied (no
//     whole-tensor copies), bitwise the float32 path on the widened tensors, rounded once;
//   bfloat16 pairs (PairBlock), where the CPU has AVX-512 BF16: vdpbf16ps takes the pixels two at
//     a time, so strips hold 32-bit words {x[j], x[j + stride * C]} (a pixel's value and its right
//     neighbour's) and dy rows are packed in pixel pairs; twice the products per instruction.
// Workspace per task: one block (about kPixelBlock pixels, 1 MiB of strips at most), plus at most
// 16 float32 partial filters summed in a fixed order.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include <tbb/parallel_for.h>

#include "dagrad/backends/cpu/bf16_kernels.hpp"
#include "dagrad/backends/cpu/conv2d/kernels.hpp"
#include "dagrad/backends/cpu/conv2d/reduction_partials.hpp"
#include "dagrad/backends/cpu/conv2d/strips.hpp"
#include "dagrad/backends/cpu/conv2d/tile_walk.hpp"
#include "dagrad/backends/cpu/microkernels.hpp"
#include "dagrad/backends/cpu/scratch_array.hpp"

namespace dagrad::cpu {
namespace {

using ops::Conv2DGeometry;
using i64 = std::int64_t;
using u16 = std::uint16_t;
using u32 = std::uint32_t;

constexpr i64 kMaxStripRows = 160;  // filter gradient rows (KH * KW * C) this path takes at most
constexpr i64 kPixelBlock = 128;    // pixels per block of strips: dy's block stays in L1
// Where one column group takes all of K, each dy row is read once anyway: larger blocks then
// spend less on the kernel's accumulator loads and stores and on each block's setup. The kernel
// adds pixels in order whatever the block, so the bits stay. On Zen 4, 1 thread: 3x3 1->32 1.10x,
// 5x5 1->32 1.09x (bfloat16 1.05x), 7x7/2 3->64 1.08x; 4096 measured no faster.
constexpr i64 kOnePassPixelBlock = 1024;
constexpr i64 kFilterColumns = 64;             // df columns per micro-kernel call
constexpr i64 kMaxBlockFloats = i64{1} << 18;  // strip values per task at most (1 MiB of float32)

template <class T>
void fill_strips(const Conv2DGeometry& g, const Strips& st, const T* x, i64 q, i64 nq, auto* out) {
  for (i64 i = 0; i < nq; ++i) fill_strip(g, st, x, (q + i) / g.out_rows, (q + i) % g.out_rows, out + i * st.floats);
}

// A block of output rows as float32 strips and dy rows, for the float32 grid kernel. Where the
// windows of consecutive output rows overlap (strips_share_rows), the block's rows of one image
// share one slice of padded input rows (on 28x28 first layers the copies per window took 16% of
// the time). The kernel then runs once per image the block touches; it sums rows in order, so
// the bits are the strips' bits.
template <class T>
class FloatBlock {
 public:
  FloatBlock(const Conv2DGeometry& g, const Strips& st, i64 block_rows)
      : g_(g),
        st_(st),
        mk_(micro_kernels()),
        slices_(strips_share_rows(g)),
        strips_(block_rows * st.floats),  // a slice of r rows: at most r strips
        dy_(std::is_same_v<T, float> ? 0 : block_rows * g.out_cols * g.out_depth),
        nhwc_(g.data_format == ops::DataFormat::NCHW ? block_rows * g.out_cols * g.out_depth : 0) {}
  int max_rows(i64 columns) const { return mk_.grid_max_rows(columns); }

  // Output rows [q, q + nq) of all images in turn.
  void load(const T* x, const T* dy, i64 q, i64 nq) {
    segments_.clear();
    if (!slices_) {
      fill_strips(g_, st_, x, q, nq, strips_.data());
      segments_.push_back({0, 0, nq});
    } else {
      i64 at = 0;
      for (i64 i = 0; i < nq;) {
        const i64 n = (q + i) / g_.out_rows, oh = (q + i) % g_.out_rows, run = std::min(nq - i, g_.out_rows - oh);
        segments_.push_back({at, i, run});
        at += fill_slice(g_, st_, x, n, oh, run, strips_.data() + at);
        i += run;
      }
    }
    const T* rows = nhwc_dy_rows(g_, dy, q, nq, nhwc_.data());
    if constexpr (std::is_same_v<T, float>)
      y_ = rows;
    else
      convert_to_float(rows, dy_.data(), nq * g_.out_cols * g_.out_depth), y_ = dy_.data();
  }
  // d[r][c0 + 0:n] += the block's products for df rows at offsets off[0:mr].
  void accumulate(int mr, i64 c0, i64 n, const long long* off, i64, float* d) const {
    const i64 K = g_.out_depth, OW = g_.out_cols;
    const i64 row_step = slices_ ? g_.stride_rows * st_.row_floats : st_.floats;
    for (const Segment& s : segments_)
      mk_.grid(mr, n, strips_.data() + s.strip, off, strip_pixel_step(g_), row_step, OW, s.rows,
               y_ + s.first_row * OW * K + c0, K, d, K, true);
  }

 private:
  struct Segment {
    i64 strip, first_row, rows;  // where its strips start; its rows within the block
  };
  const Conv2DGeometry& g_;
  const Strips& st_;
  const MicroKernels& mk_;
  bool slices_;
  ScratchArray<float> strips_, dy_;  // each block writes all it reads
  ScratchArray<T> nhwc_;             // the block's dy rows transposed from NCHW
  std::vector<Segment> segments_;
  const float* y_ = nullptr;
};

// A block as bfloat16 pair words: strip word j = {s[j], s[j + sx]} (sx = stride * C, the next
// pixel's value of the same tap), so pixel pair (2q, 2q + 1) reads one word at pixel 2q's offset;
// dy rows packed in pixel pairs (an odd row's last pixel paired with zeros). Where the whole
// filter gradient is one tile tall (up to 12 rows: C = 1 layers) each dy pair is read once, so
// the kernel pairs the dy rows in registers instead (grid_dy), and the packing pass goes.
class PairBlock {
 public:
  PairBlock(const Conv2DGeometry& g, const Strips& st, i64 block_rows)
      : g_(g),
        st_(st),
        bk_(*bf16_kernels()),
        sx_(strip_pixel_step(g)),  // 0 for a lone pixel: its phantom partner reads itself
        pairs_((g.out_cols + 1) / 2),
        ldy_((g.out_depth + 15) / 16 * 16),
        bits_(block_rows * st.floats + sx_),
        words_(block_rows * st.floats),
        one_tile_(g.filter_rows * g.filter_cols * g.in_depth <= kBf16MaxGridRows),
        dy_(static_cast<std::size_t>(one_tile_ ? 0 : block_rows * pairs_ * ldy_)),
        nhwc_(g.data_format == ops::DataFormat::NCHW ? block_rows * g.out_cols * g.out_depth : 0),
        pixels_(static_cast<std::size_t>(g.out_cols)) {}
  int max_rows(i64 columns) const { return one_tile_ ? kBf16MaxGridRows : bk_.grid_max_rows(columns); }

  void load(const bfloat16* x, const bfloat16* dy, i64 q, i64 nq) {
    fill_strips(g_, st_, x, q, nq, bits_.data());
    const i64 n = nq * st_.floats;
    // The partner of a phantom last pixel reads up to sx values past the block: zeros (times its zero dy).
    u16* bits = bits_.data();
    u32* words = words_.data();
    std::fill_n(bits + n, sx_, u16{0});
    for (i64 j = 0; j < n; ++j) words[j] = bits[j] | static_cast<u32>(bits[j + sx_]) << 16;
    const u16* rows = reinterpret_cast<const u16*>(nhwc_dy_rows(g_, dy, q, nq, nhwc_.data()));
    if (one_tile_) {
      rows_ = rows;
      return;
    }
    for (i64 i = 0; i < nq; ++i) {
      for (i64 j = 0; j < g_.out_cols; ++j) pixels_.data()[j] = rows + (i * g_.out_cols + j) * g_.out_depth;
      bk_.pack_pairs(pixels_.data(), 0, g_.out_cols, g_.out_depth, dy_.data() + i * pairs_ * ldy_, ldy_);
    }
  }
  void accumulate(int mr, i64 c0, i64 n, const long long* off, i64 nq, float* d) const {
    if (one_tile_)
      return bk_.grid_dy(mr, n, words_.data(), off, 2 * sx_, st_.floats, nq, rows_ + c0, g_.out_depth, g_.out_cols, d,
                         g_.out_depth);
    bk_.grid(mr, n, words_.data(), off, 2 * sx_, st_.floats, pairs_, nq, dy_.data() + c0, ldy_, d, g_.out_depth);
  }

 private:
  const Conv2DGeometry& g_;
  const Strips& st_;
  const Bf16Kernels& bk_;
  i64 sx_, pairs_, ldy_;
  ScratchArray<u16> bits_;  // each block writes all it reads
  ScratchArray<u32> words_;
  bool one_tile_;
  std::vector<u32> dy_;
  const u16* rows_ = nullptr;    // the block's dy rows (NHWC) where one_tile_
  ScratchArray<bfloat16> nhwc_;  // the block's dy rows transposed from NCHW
  std::vector<const u16*> pixels_;
};

// The walk both forms share: fixed chunks of output rows, blocks of strips, tiles of df rows.
template <class Block, class T>
void strips_filter_gradient(const Conv2DGeometry& g, const T* x, const T* dy, T* df) {
  const i64 C = g.in_depth, K = g.out_depth, OW = g.out_cols;
  const i64 rows = g.filter_rows * g.filter_cols * C, fsize = rows * K;
  const Strips st = strips_of(g);
  // Offset of df row (kh, kw, c) from a pixel's window origin on its strip.
  std::vector<long long> offset(static_cast<std::size_t>(rows));
  for (i64 kh = 0; kh < g.filter_rows; ++kh)
    for (i64 kw = 0; kw < g.filter_cols; ++kw)
      for (i64 c = 0; c < C; ++c)
        offset[static_cast<std::size_t>((kh * g.filter_cols + kw) * C + c)] =
            kh * st.row_floats + kw * g.dilation_cols * C + c;
  const i64 pixel_rows = g.batch * g.out_rows;
  const i64 pixel_block = K <= kFilterColumns ? kOnePassPixelBlock : kPixelBlock;
  const i64 block_rows = std::max<i64>(1, std::min(pixel_block / OW, kMaxBlockFloats / st.floats));
  const i64 chunks = filter_reduction_chunks(pixel_rows, 1, fsize * 4);
  float* direct = nullptr;  // chunk 0 sums straight into df where df is float32
  if constexpr (std::is_same_v<T, float>) direct = df;
  const ReductionPartials<float> partial(chunks, fsize, direct);
  tbb::parallel_for(i64{0}, chunks, [&](i64 chunk) {
    float* d = partial.chunk(chunk);
    std::fill_n(d, fsize, 0.0f);
    Block block(g, st, block_rows);
    const i64 q_end = pixel_rows * (chunk + 1) / chunks;
    for (i64 q = pixel_rows * chunk / chunks; q < q_end; q += block_rows) {
      const i64 nq = std::min(block_rows, q_end - q);
      block.load(x, dy, q, nq);
      for (i64 c0 = 0; c0 < K; c0 += kFilterColumns) {
        const i64 cn = std::min(kFilterColumns, K - c0);
        equal_tiles(rows, block.max_rows(cn), [&](i64 a, i64 mr) {
          block.accumulate(static_cast<int>(mr), c0, cn, offset.data() + a, nq, d + a * K + c0);
        });
      }
    }
  });
  partial.sum_to(df);
}

}  // namespace

bool conv2d_filter_strips_apply(const Conv2DGeometry& g) {
  // Each factor at most kMaxStripRows first, so their product cannot overflow.
  return g.groups == 1 && g.filter_rows <= kMaxStripRows && g.filter_cols <= kMaxStripRows &&
         g.in_depth <= kMaxStripRows && g.filter_rows * g.filter_cols * g.in_depth <= kMaxStripRows &&
         strips_are_compact(g, kMaxBlockFloats);
}

template <class T>
void conv2d_backprop_filter_strips(const Conv2DGeometry& g, const T* x, const T* dy, T* df) {
  if constexpr (std::is_same_v<T, bfloat16>) {
    if (bf16_kernels()) return strips_filter_gradient<PairBlock>(g, x, dy, df);
  }
  strips_filter_gradient<FloatBlock<T>>(g, x, dy, df);
}

template void conv2d_backprop_filter_strips<float>(const Conv2DGeometry&, const float*, const float*, float*);
template void conv2d_backprop_filter_strips<half>(const Conv2DGeometry&, const half*, const half*, half*);
template void conv2d_backprop_filter_strips<bfloat16>(const Conv2DGeometry&, const bfloat16*, const bfloat16*,
                                                      bfloat16*);

}  // namespace dagrad::cpu
