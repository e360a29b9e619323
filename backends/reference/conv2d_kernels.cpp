// Reference kernels of Conv2D, Conv2DBackpropInput(V2) and Conv2DBackpropFilter(V2): the direct
// definition as plain loops, accumulated in double and rounded once per output element. They are
// the oracle the fast backends are tested against, so clarity beats speed here.
#include "dagrad/backends/reference/register.hpp"
#include "dagrad/ops/conv_geometry.hpp"
#include "dagrad/ops/fused_conv2d.hpp"

namespace dagrad::reference {
namespace {

using std::int64_t;

// Element offsets of an activation tensor (input or output) in either layout.
struct ActivationIndex {
  int64_t n_stride, h_stride, w_stride, c_stride;
  ActivationIndex(ops::DataFormat format, int64_t rows, int64_t cols, int64_t depth) {
    if (format == ops::DataFormat::NHWC) {
      c_stride = 1, w_stride = depth, h_stride = cols * depth, n_stride = rows * cols * depth;
    } else {
      w_stride = 1, h_stride = cols, c_stride = rows * cols, n_stride = depth * rows * cols;
    }
  }
  int64_t operator()(int64_t n, int64_t h, int64_t w, int64_t c) const {
    return n * n_stride + h * h_stride + w * w_stride + c * c_stride;
  }
};

// Offset of filter[kh, kw, ci, co] in the HWIO filter.
int64_t filter_offset(const ops::Conv2DGeometry& g, int64_t kh, int64_t kw, int64_t ci, int64_t co) {
  return ((kh * g.filter_cols + kw) * g.filter_in_depth + ci) * g.out_depth + co;
}

// Input row read by output row o through filter tap k (-1 in the padding), and its transpose.
using ops::conv_input_pos;
using ops::conv_output_pos;

// Each kernel gathers: one output element at a time, its whole sum in double, rounded once.

// output[n, oh, ow, co] = sum over taps inside the input and over the group's input channels of
// input[n, ih, iw, group * filter_in_depth + ci] * filter[kh, kw, ci, co].
template <class T>
void conv2d(KernelContext& c) {
  const auto g = ops::conv2d_geometry(c);
  Tensor& out = c.allocate_output(0);
  if (out.num_elements() == 0) return;
  T* y = out.data<T>();
  // An empty input or filter (all taps in the padding, or none): zeros, without forming the
  // strides of an empty tensor, whose other dims may be huge.
  if (c.input(0).num_elements() == 0 || c.input(1).num_elements() == 0) {
    for (int64_t i = 0; i < out.num_elements(); ++i) y[i] = narrow<T>(0.0);
    return;
  }
  const T* x = c.input(0).data<T>();
  const T* w = c.input(1).data<T>();
  const ActivationIndex xi(g.data_format, g.in_rows, g.in_cols, g.in_depth);
  const ActivationIndex yi(g.data_format, g.out_rows, g.out_cols, g.out_depth);
  const int64_t per_group = g.out_depth_per_group();
  for (int64_t n = 0; n < g.batch; ++n)
    for (int64_t oh = 0; oh < g.out_rows; ++oh)
      for (int64_t ow = 0; ow < g.out_cols; ++ow)
        for (int64_t co = 0; co < g.out_depth; ++co) {
          const int64_t first_channel = (co / per_group) * g.filter_in_depth;
          double sum = 0.0;
          for (int64_t kh = 0; kh < g.filter_rows; ++kh) {
            const int64_t ih = conv_input_pos(oh, kh, g.stride_rows, g.dilation_rows, g.pad_top, g.in_rows);
            if (ih < 0) continue;
            for (int64_t kw = 0; kw < g.filter_cols; ++kw) {
              const int64_t iw = conv_input_pos(ow, kw, g.stride_cols, g.dilation_cols, g.pad_left, g.in_cols);
              if (iw < 0) continue;
              for (int64_t ci = 0; ci < g.filter_in_depth; ++ci) {
                sum += widen<T>(x[xi(n, ih, iw, first_channel + ci)]) * widen<T>(w[filter_offset(g, kh, kw, ci, co)]);
              }
            }
          }
          y[yi(n, oh, ow, co)] = narrow<T>(sum);
        }
}

// input_backprop[n, ih, iw, ch] = sum over every (output position, tap, output channel of ch's
// group) that read input[n, ih, iw, ch] of out_backprop * filter: the transpose of conv2d.
template <class T>
void conv2d_backprop_input(KernelContext& c) {
  const auto g = ops::conv2d_geometry(c);
  Tensor& out = c.allocate_output(0);
  if (out.num_elements() == 0) return;
  T* dx = out.data<T>();
  if (c.input(1).num_elements() == 0 || c.input(2).num_elements() == 0) {  // nothing flows back
    for (int64_t i = 0; i < out.num_elements(); ++i) dx[i] = narrow<T>(0.0);
    return;
  }
  const T* w = c.input(1).data<T>();
  const T* dy = c.input(2).data<T>();
  const ActivationIndex xi(g.data_format, g.in_rows, g.in_cols, g.in_depth);
  const ActivationIndex yi(g.data_format, g.out_rows, g.out_cols, g.out_depth);
  const int64_t per_group = g.out_depth_per_group();
  for (int64_t n = 0; n < g.batch; ++n)
    for (int64_t ih = 0; ih < g.in_rows; ++ih)
      for (int64_t iw = 0; iw < g.in_cols; ++iw)
        for (int64_t ch = 0; ch < g.in_depth; ++ch) {
          const int64_t group = ch / g.filter_in_depth, ci = ch % g.filter_in_depth;
          double sum = 0.0;
          for (int64_t kh = 0; kh < g.filter_rows; ++kh) {
            const int64_t oh = conv_output_pos(ih, kh, g.stride_rows, g.dilation_rows, g.pad_top, g.out_rows);
            if (oh < 0) continue;
            for (int64_t kw = 0; kw < g.filter_cols; ++kw) {
              const int64_t ow = conv_output_pos(iw, kw, g.stride_cols, g.dilation_cols, g.pad_left, g.out_cols);
              if (ow < 0) continue;
              for (int64_t co = group * per_group; co < (group + 1) * per_group; ++co) {
                sum += widen<T>(dy[yi(n, oh, ow, co)]) * widen<T>(w[filter_offset(g, kh, kw, ci, co)]);
              }
            }
          }
          dx[xi(n, ih, iw, ch)] = narrow<T>(sum);
        }
}

// filter_backprop[kh, kw, ci, co] = sum over batch and output positions whose tap (kh, kw) lies
// inside the input of input[n, ih, iw, group * filter_in_depth + ci] * out_backprop[n, oh, ow, co].
template <class T>
void conv2d_backprop_filter(KernelContext& c) {
  const auto g = ops::conv2d_geometry(c);
  Tensor& out = c.allocate_output(0);
  if (out.num_elements() == 0) return;
  T* dw = out.data<T>();
  // No output positions (batch 0 or an empty spatial output): the gradient is zero. Returning
  // here also avoids walking a huge grid with nothing in it.
  if (c.input(2).num_elements() == 0 || c.input(0).num_elements() == 0) {
    for (int64_t i = 0; i < out.num_elements(); ++i) dw[i] = narrow<T>(0.0);
    return;
  }
  const T* x = c.input(0).data<T>();
  const T* dy = c.input(2).data<T>();
  const ActivationIndex xi(g.data_format, g.in_rows, g.in_cols, g.in_depth);
  const ActivationIndex yi(g.data_format, g.out_rows, g.out_cols, g.out_depth);
  const int64_t per_group = g.out_depth_per_group();
  for (int64_t kh = 0; kh < g.filter_rows; ++kh)
    for (int64_t kw = 0; kw < g.filter_cols; ++kw)
      for (int64_t ci = 0; ci < g.filter_in_depth; ++ci)
        for (int64_t co = 0; co < g.out_depth; ++co) {
          const int64_t ch = (co / per_group) * g.filter_in_depth + ci;
          double sum = 0.0;
          for (int64_t n = 0; n < g.batch; ++n)
            for (int64_t oh = 0; oh < g.out_rows; ++oh) {
              const int64_t ih = conv_input_pos(oh, kh, g.stride_rows, g.dilation_rows, g.pad_top, g.in_rows);
              if (ih < 0) continue;
              for (int64_t ow = 0; ow < g.out_cols; ++ow) {
                const int64_t iw = conv_input_pos(ow, kw, g.stride_cols, g.dilation_cols, g.pad_left, g.in_cols);
                if (iw < 0) continue;
                sum += widen<T>(x[xi(n, ih, iw, ch)]) * widen<T>(dy[yi(n, oh, ow, co)]);
              }
            }
          dw[filter_offset(g, kh, kw, ci, co)] = narrow<T>(sum);
        }
}

// _FusedConv2D: conv2d, then BiasAdd's and Relu's element rules on its rounded output.
template <class T>
void fused_conv2d(KernelContext& c) {
  conv2d<T>(c);
  Tensor& out = c.outputs().at(0);
  if (out.num_elements() == 0) return;
  const auto g = ops::conv2d_geometry(c);
  const ActivationIndex yi(g.data_format, g.out_rows, g.out_cols, g.out_depth);
  const T* bias = c.input(2).data<T>();
  const bool relu = ops::fused_conv2d_relu(c.attrs());
  T* y = out.data<T>();
  for (int64_t n = 0; n < g.batch; ++n)
    for (int64_t oh = 0; oh < g.out_rows; ++oh)
      for (int64_t ow = 0; ow < g.out_cols; ++ow)
        for (int64_t co = 0; co < g.out_depth; ++co) {
          T& v = y[yi(n, oh, ow, co)];
          v = narrow<T>(widen<T>(v) + widen<T>(bias[co]));
          if (relu && widen<T>(v) < 0) v = T(0);  // NaN stays, as Relu's x < 0 ? 0 : x
        }
}

}  // namespace

void register_conv2d_kernels(KernelRegistry& r) {
  constexpr auto kCpu = Device::Kind::CPU;
  add_kernels(r, "Conv2D", kCpu, kBackend, kPriority, kSchemaDTypes,
              float_kernels([]<class T>() -> KernelFn { return conv2d<T>; }));
  add_kernels(r, "_FusedConv2D", kCpu, kBackend, kPriority, kSchemaDTypes,
              float_kernels([]<class T>() -> KernelFn { return fused_conv2d<T>; }));
  for (const char* op : {"Conv2DBackpropInput", "Conv2DBackpropInputV2"}) {
    add_kernels(r, op, kCpu, kBackend, kPriority, kSchemaDTypes,
                float_kernels([]<class T>() -> KernelFn { return conv2d_backprop_input<T>; }));
  }
  for (const char* op : {"Conv2DBackpropFilter", "Conv2DBackpropFilterV2"}) {
    add_kernels(r, op, kCpu, kBackend, kPriority, kSchemaDTypes,
                float_kernels([]<class T>() -> KernelFn { return conv2d_backprop_filter<T>; }));
  }
}

}  // namespace dagrad::reference
