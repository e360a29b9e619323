// The NCHW conv ops on the NHWC paths: slabs of a few images are transposed to NHWC (one pass over
// each tensor against KH * KW * K flops per input element), run through the NHWC dispatch
// (whichever NHWC row fits: strips, nhwc_fast, bf16_native, amx, ...) and, for Conv2D and the input
// gradient, transposed back; the float32 filter gradient adds its slabs' partial filters in slab
// order, the bfloat16 one takes the whole batch as one slab so that its filter is rounded once.
// Workspace: one slab of both activations (at most kSlabFloats floats, or one image of at most
// kMaxSlabFloats), plus one partial filter for the filter gradient; bfloat16 filter gradient: both
// activations in bfloat16 (the widened float32 route took twice that).
#include <algorithm>

#include <tbb/parallel_for.h>

#include "dagrad/backends/cpu/conv2d/kernels.hpp"
#include "dagrad/backends/cpu/float_buffer.hpp"
#include "dagrad/backends/cpu/transpose.hpp"

namespace dagrad::cpu {
namespace {

using ops::Conv2DGeometry;
using i64 = std::int64_t;

constexpr i64 kSlabFloats = i64{1} << 20;  // both activations of one slab: 4 MiB of float32 at most (or one image)
// One image of both activations at most (64 MiB): larger images take the generic path, which reads
// NCHW in place, so that the workspace has a fixed cap.
constexpr i64 kMaxSlabFloats = i64{1} << 24;
// Workspace of T elements from the caching host allocator (none for count 0).
template <class T>
class Slab {
 public:
  explicit Slab(i64 count) : buffer_(count > 0 ? (count * static_cast<i64>(sizeof(T)) + 3) / 4 : 0) {}
  T* data() const { return reinterpret_cast<T*>(buffer_.data()); }

 private:
  FloatBuffer buffer_;
};

// Images per slab: as many as fit kSlabFloats (at least one, at most the batch).
i64 slab_images(i64 batch, i64 image_a, i64 image_b) {
  return std::clamp<i64>(kSlabFloats / std::max<i64>(image_a + image_b, 1), 1, std::max<i64>(batch, 1));
}

Conv2DGeometry as_nhwc(const Conv2DGeometry& g, i64 batch) {
  Conv2DGeometry nhwc = g;
  nhwc.data_format = ops::DataFormat::NHWC;
  nhwc.batch = batch;
  return nhwc;
}

// `images` images of depth x pixels in NHWC: `src` itself where one channel makes the two layouts
// the same, else its transpose in `buffer`.
template <class T>
const T* nhwc_images(const T* src, i64 images, i64 depth, i64 pixels, T* buffer) {
  if (depth == 1) return src;
  transpose_images(src, images, depth, pixels, buffer);
  return buffer;
}

// Conv2D and the input gradient: `in` (x, or dy) of in_depth x in_pixels per image to `out` (y, or
// dx) of out_depth x out_pixels, `other` (the filter) as it is; `run` is the NHWC dispatch.
template <class T, class Run>
void through_nhwc(const Conv2DGeometry& g, const T* in, i64 in_depth, i64 in_pixels, const T* other, T* out,
                  i64 out_depth, i64 out_pixels, Run run) {
  const i64 in_image = in_depth * in_pixels, out_image = out_depth * out_pixels;
  const i64 slab = slab_images(g.batch, in_image, out_image);
  // With one channel the two layouts are the same.
  Slab<T> ins(in_depth > 1 ? slab * in_image : 0), outs(out_depth > 1 ? slab * out_image : 0);
  for (i64 n0 = 0; n0 < g.batch; n0 += slab) {
    const Conv2DGeometry gs = as_nhwc(g, std::min(slab, g.batch - n0));
    T* dst = out + n0 * out_image;
    run(gs, nhwc_images(in + n0 * in_image, gs.batch, in_depth, in_pixels, ins.data()), other,
        out_depth > 1 ? outs.data() : dst);
    if (out_depth > 1) transpose_images(outs.data(), gs.batch, out_pixels, out_depth, dst);
  }
}

}  // namespace

bool conv2d_nchw_slabs_apply(const Conv2DGeometry& g) {
  // In double: a product of hostile sizes must not wrap (the dispatch only calls with tensors
  // that exist, but this predicate is public).
  const double image =
      static_cast<double>(g.in_rows) * static_cast<double>(g.in_cols) * static_cast<double>(g.in_depth) +
      static_cast<double>(g.out_rows) * static_cast<double>(g.out_cols) * static_cast<double>(g.out_depth);
  return g.data_format == ops::DataFormat::NCHW && image <= static_cast<double>(kMaxSlabFloats);
}

template <class T>
void conv2d_forward_nchw_slabs(const Conv2DGeometry& g, const T* x, const T* f, T* y) {
  through_nhwc(g, x, g.in_depth, g.in_rows * g.in_cols, f, y, g.out_depth, g.out_rows * g.out_cols,
               [](const Conv2DGeometry& gs, const T* xs, const T* fs, T* ys) { conv2d_forward<T>(gs, xs, fs, ys); });
}

template <class T>
void conv2d_backprop_input_nchw_slabs(const Conv2DGeometry& g, const T* f, const T* dy, T* dx) {
  through_nhwc(
      g, dy, g.out_depth, g.out_rows * g.out_cols, f, dx, g.in_depth, g.in_rows * g.in_cols,
      [](const Conv2DGeometry& gs, const T* dys, const T* fs, T* dxs) { conv2d_backprop_input<T>(gs, fs, dys, dxs); });
}

void conv2d_backprop_filter_nchw_slabs(const Conv2DGeometry& g, const float* x, const float* dy, float* df) {
  const i64 in_pixels = g.in_rows * g.in_cols, out_pixels = g.out_rows * g.out_cols;
  const i64 x_image = in_pixels * g.in_depth, dy_image = out_pixels * g.out_depth;
  const i64 fsize = g.filter_rows * g.filter_cols * g.filter_in_depth * g.out_depth;
  const i64 slab = slab_images(g.batch, x_image, dy_image);
  Slab<float> xs(g.in_depth > 1 ? slab * x_image : 0), dys(g.out_depth > 1 ? slab * dy_image : 0),
      part(g.batch > slab ? fsize : 0);
  if (g.batch == 0) {
    std::fill_n(df, fsize, 0.0f);
    return;
  }
  for (i64 n0 = 0; n0 < g.batch; n0 += slab) {
    const Conv2DGeometry gs = as_nhwc(g, std::min(slab, g.batch - n0));
    const float* xn = nhwc_images(x + n0 * x_image, gs.batch, g.in_depth, in_pixels, xs.data());
    const float* dyn = nhwc_images(dy + n0 * dy_image, gs.batch, g.out_depth, out_pixels, dys.data());
    float* out = n0 == 0 ? df : part.data();
    conv2d_backprop_filter<float>(gs, xn, dyn, out);  // the NHWC dispatch
    if (n0 > 0) {                                     // slab order: the same bits for any thread count
      float* p = part.data();
      tbb::parallel_for(i64{0}, (fsize + 4095) / 4096, [&](i64 b) {
        for (i64 e = b * 4096; e < std::min(fsize, (b + 1) * 4096); ++e) df[e] += p[e];
      });
    }
  }
}

void conv2d_backprop_filter_nchw_whole(const Conv2DGeometry& g, const bfloat16* x, const bfloat16* dy, bfloat16* df) {
  const i64 x_size = g.batch * g.in_depth * g.in_rows * g.in_cols;
  const i64 dy_size = g.batch * g.out_depth * g.out_rows * g.out_cols;
  Slab<bfloat16> xs(g.in_depth > 1 ? x_size : 0), dys(g.out_depth > 1 ? dy_size : 0);
  conv2d_backprop_filter<bfloat16>(as_nhwc(g, g.batch),  // the NHWC dispatch
                                   nhwc_images(x, g.batch, g.in_depth, g.in_rows * g.in_cols, xs.data()),
                                   nhwc_images(dy, g.batch, g.out_depth, g.out_rows * g.out_cols, dys.data()), df);
}

#define DAGRAD_NCHW_SLABS(T)                                                                 \
  template void conv2d_forward_nchw_slabs<T>(const Conv2DGeometry&, const T*, const T*, T*); \
  template void conv2d_backprop_input_nchw_slabs<T>(const Conv2DGeometry&, const T*, const T*, T*);
DAGRAD_NCHW_SLABS(half)
DAGRAD_NCHW_SLABS(bfloat16)
DAGRAD_NCHW_SLABS(float)
#undef DAGRAD_NCHW_SLABS

}  // namespace dagrad::cpu
