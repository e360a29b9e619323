// The float32 NCHW filter gradient on the NHWC kernels: slabs of a few images of x and dy are
// transposed to NHWC (a pass over each against KH * KW * K flops per input element), their
// filter gradients computed by the NHWC dispatch (whichever NHWC kernel fits) and added in slab
// order. Workspace: one slab (at most kSlabFloats floats, or one image of at most kMaxSlabFloats)
// plus one partial filter.
#include <algorithm>

#include <tbb/parallel_for.h>

#include "dagrad/backends/cpu/conv2d/kernels.hpp"
#include "dagrad/backends/cpu/float_buffer.hpp"

namespace dagrad::cpu {
namespace {

using ops::Conv2DGeometry;
using i64 = std::int64_t;

constexpr i64 kSlabFloats = i64{1} << 20;  // x and dy of one slab: 4 MiB at most (or one image)
// One image of x and dy at most (64 MiB): larger images take the generic path, which reads NCHW
// in place, so that the workspace has a fixed cap.
constexpr i64 kMaxSlabFloats = i64{1} << 24;
constexpr i64 kBlock = 64;  // transpose blocks: 64 x 64 floats (16 KiB, in L1)

// out[n][p][c] = in[n][c][p] for `images` images of `channels` x `pixels`, block by block: each
// block reads 64 rows of 64 floats and writes 64 rows of 64 floats, all from L1.
void to_nhwc(const float* in, i64 images, i64 channels, i64 pixels, float* out) {
  const i64 cblocks = (channels + kBlock - 1) / kBlock, pblocks = (pixels + kBlock - 1) / kBlock;
  tbb::parallel_for(i64{0}, images * pblocks * cblocks, [&](i64 task) {
    const i64 n = task / (pblocks * cblocks), p0 = task / cblocks % pblocks * kBlock, c0 = task % cblocks * kBlock;
    const i64 p1 = std::min(pixels, p0 + kBlock), c1 = std::min(channels, c0 + kBlock);
    const float* src = in + n * channels * pixels;
    float* dst = out + n * channels * pixels;
    for (i64 p = p0; p < p1; ++p)
      for (i64 c = c0; c < c1; ++c) dst[p * channels + c] = src[c * pixels + p];
  });
}

}  // namespace

bool conv2d_filter_nchw_slabs_apply(const Conv2DGeometry& g) {
  // In double: a product of hostile sizes must not wrap (the dispatch only calls with tensors
  // that exist, but this predicate is public).
  const double image =
      static_cast<double>(g.in_rows) * static_cast<double>(g.in_cols) * static_cast<double>(g.in_depth) +
      static_cast<double>(g.out_rows) * static_cast<double>(g.out_cols) * static_cast<double>(g.out_depth);
  return g.data_format == ops::DataFormat::NCHW && image <= static_cast<double>(kMaxSlabFloats);
}

void conv2d_backprop_filter_nchw_slabs(const Conv2DGeometry& g, const float* x, const float* dy, float* df) {
  const i64 in_pixels = g.in_rows * g.in_cols, out_pixels = g.out_rows * g.out_cols;
  const i64 x_image = in_pixels * g.in_depth, dy_image = out_pixels * g.out_depth;
  const i64 fsize = g.filter_rows * g.filter_cols * g.filter_in_depth * g.out_depth;
  const i64 slab = std::clamp<i64>(kSlabFloats / std::max<i64>(x_image + dy_image, 1), 1, std::max<i64>(g.batch, 1));
  FloatBuffer xs(g.in_depth > 1 ? slab * x_image : 0), dys(g.out_depth > 1 ? slab * dy_image : 0),
      part(g.batch > slab ? fsize : 0);
  if (g.batch == 0) {
    std::fill_n(df, fsize, 0.0f);
    return;
  }
  Conv2DGeometry gs = g;
  gs.data_format = ops::DataFormat::NHWC;
  for (i64 n0 = 0; n0 < g.batch; n0 += slab) {
    gs.batch = std::min(slab, g.batch - n0);
    // With one channel the two layouts are the same.
    const float* xn = x + n0 * x_image;
    const float* dyn = dy + n0 * dy_image;
    if (g.in_depth > 1) to_nhwc(xn, gs.batch, g.in_depth, in_pixels, xs.data()), xn = xs.data();
    if (g.out_depth > 1) to_nhwc(dyn, gs.batch, g.out_depth, out_pixels, dys.data()), dyn = dys.data();
    float* out = n0 == 0 ? df : part.data();
    conv2d_backprop_filter<float>(gs, xn, dyn, out);  // the NHWC dispatch: depthwise, strips or segments
    if (n0 > 0) {                                     // slab order: the same bits for any thread count
      float* p = part.data();
      tbb::parallel_for(i64{0}, (fsize + 4095) / 4096, [&](i64 b) {
        for (i64 e = b * 4096; e < std::min(fsize, (b + 1) * 4096); ++e) df[e] += p[e];
      });
    }
  }
}

}  // namespace dagrad::cpu
