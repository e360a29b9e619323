// Fast float32 NCHW Conv2DBackpropFilter (see conv2d_nchw_kernels.hpp): each filter entry is a
// dot product of an input-channel row with an output-channel row along the contiguous columns,
// taken lane-wise in registers by the dots micro-kernel over a block of rows at a time. The
// pixel rows are split into filter_reduction_chunks fixed chunks (a function of the shapes only);
// their partial filters are added in chunk order, so the bits do not depend on the thread count.
#include <algorithm>
#include <vector>

#include <tbb/parallel_for.h>

#include "dagrad/backends/cpu/conv2d_kernels.hpp"
#include "dagrad/backends/cpu/conv2d_nchw_kernels.hpp"
#include "dagrad/backends/cpu/conv2d_nchw_panel.hpp"
#include "dagrad/backends/cpu/nchw_microkernels.hpp"
#include "dagrad/backends/cpu/reduction_partials.hpp"

namespace dagrad::cpu {
namespace {

using ops::Conv2DGeometry;
using namespace nchw;

constexpr i64 kChannelBlock = 30;         // input channels per task (a multiple of the 5- and 3-row tiles)
constexpr i64 kFilterBlock = 60;          // output channels per task
constexpr i64 kPanelBytes = i64{1} << 19;  // both panels of a block of rows, about
constexpr i64 kSegmentTarget = 48;  // vectors per dots call: 5 rows of them stay in L1; amortises the lane sums

}  // namespace

bool conv2d_backprop_filter_fast_nchw_sums_tails(const Conv2DGeometry& g) {
  return g.out_cols % nchw_micro_kernels().vector_width != 0;
}

void conv2d_backprop_filter_fast_nchw(const Conv2DGeometry& g, const float* x, const float* dy, float* df) {
  const NchwMicroKernels& mk = nchw_micro_kernels();
  const i64 VL = mk.vector_width;
  const i64 C = g.in_depth, H = g.in_rows, W = g.in_cols, K = g.out_depth, OH = g.out_rows, OW = g.out_cols;
  const i64 cg = g.filter_in_depth, kg = g.out_depth_per_group(), KH = g.filter_rows, KW = g.filter_cols;
  const i64 taps = KH * KW, sw = g.stride_cols, fsize = taps * cg * K;
  const i64 segs_per_row = ceil_div(OW, VL), cols = segs_per_row * VL;
  const i64 phase_len = cols + (KW - 1) * g.dilation_cols / sw;
  const i64 cblocks = ceil_div(cg, kChannelBlock), kblocks = ceil_div(kg, kFilterBlock);
  const i64 per_chunk = g.groups * cblocks * kblocks, rows_total = g.batch * OH;
  const i64 chunks = filter_reduction_chunks(rows_total, per_chunk, fsize * 4);
  // Rows per block: both panels within kPanelBytes (an output row needs about stride_rows input rows).
  const i64 row_bytes =
      4 * (g.stride_rows * std::min(cg, kChannelBlock) * sw * phase_len + std::min(kg, kFilterBlock) * cols);
  const i64 R = std::clamp<i64>(kPanelBytes / row_bytes, 1, ceil_div(kSegmentTarget, segs_per_row));
  const ReductionPartials<float> partial(chunks, fsize, df);
  tbb::parallel_for(i64{0}, chunks * per_chunk, [&](i64 task) {
    const i64 chunk = task / per_chunk, grp = task / (cblocks * kblocks) % g.groups;
    const i64 c0 = task / kblocks % cblocks * kChannelBlock, k0 = task % kblocks * kFilterBlock;
    const i64 cn = std::min(kChannelBlock, cg - c0), kn = std::min(kFilterBlock, kg - k0);
    float* d = partial.chunk(chunk) + c0 * K + grp * kg + k0;  // d[(t*cg + ci)*K + k]
    for (i64 t = 0; t < taps; ++t)
      for (i64 ci = 0; ci < cn; ++ci) std::fill_n(d + (t * cg + ci) * K, kn, 0.0f);
    thread_local RowSlots xslots, yslots;
    thread_local std::vector<float> xstorage, ystorage;
    std::vector<i64> row_key;
    std::vector<const float*> xs, ys;
    Panel xpanel{nullptr, cn, sw, phase_len}, ypanel{nullptr, kn, 1, cols};
    // Chunk boundaries fall on whole output rows, as filter_reduction_chunks assumed.
    const i64 r1 = rows_total * (chunk + 1) / chunks;
    for (i64 pb = rows_total * chunk / chunks; pb < r1; pb += R) {
      const i64 pe = std::min(r1, pb + R);
      xslots.reset();
      yslots.reset();
      row_key.assign(static_cast<std::size_t>((pe - pb) * KH), -1);
      for (i64 p = pb; p < pe; ++p) {
        yslots.request(p);
        for (i64 kh = 0; kh < KH; ++kh) {
          const i64 ih = ops::conv_input_pos(p % OH, kh, g.stride_rows, g.dilation_rows, g.pad_top, H);
          const i64 key = ih < 0 ? -1 : p / OH * H + ih;
          row_key[static_cast<std::size_t>((p - pb) * KH + kh)] = key;
          xslots.request(key);
        }
      }
      xslots.finish();
      yslots.finish();
      for (auto& key : row_key) key = xslots.slot(key);
      fill_panel(xpanel, xstorage, xslots, x, C, H, W, grp * cg + c0, -g.pad_left);
      fill_panel(ypanel, ystorage, yslots, dy, K, OH, OW, grp * kg + k0, 0);  // zero past column OW
      ys.clear();
      for (i64 p = pb; p < pe; ++p)
        for (i64 s = 0; s < segs_per_row; ++s) ys.push_back(ypanel.at(1 + p - pb, 0, 0, s * VL));
      const i64 nseg = static_cast<i64>(ys.size());
      for (i64 t = 0; t < taps; ++t) {
        const i64 shift = t % KW * g.dilation_cols;
        xs.clear();
        for (i64 p = pb; p < pe; ++p) {
          const i64 slot = row_key[static_cast<std::size_t>((p - pb) * KH + t / KW)];
          for (i64 s = 0; s < segs_per_row; ++s) xs.push_back(xpanel.at(slot, 0, shift % sw, s * VL + shift / sw));
        }
        for (i64 ci = 0; ci < cn; ci += mk.dot_rows)
          for (i64 k = 0; k < kn; k += mk.dot_cols)
            mk.dots(static_cast<int>(std::min<i64>(mk.dot_rows, cn - ci)), static_cast<int>(std::min<i64>(mk.dot_cols, kn - k)),
                    xs.data(), ci * xpanel.channel_stride(), xpanel.channel_stride(), ys.data(),
                    k * ypanel.channel_stride(), ypanel.channel_stride(), nseg, d + (t * cg + ci) * K + k, K);
      }
    }
  });
  partial.sum_to(df);
}

}  // namespace dagrad::cpu
