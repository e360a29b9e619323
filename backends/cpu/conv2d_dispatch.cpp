// Chooses the conv path per call: the float32 NHWC micro-kernel path where it applies (half and
// bfloat16 there too, widened to float32 first: workspace = the two inputs and the output in
// float32), else the generic path. The choice depends on shapes and attributes only.
#include <vector>

#include <tbb/parallel_for.h>

#include "dagrad/backends/cpu/conv2d_kernels.hpp"

namespace dagrad::cpu {
namespace {

using ops::Conv2DGeometry;
using i64 = std::int64_t;

template <class T>
std::vector<float> to_float(const T* data, i64 count) {
  std::vector<float> out(static_cast<std::size_t>(count));
  tbb::parallel_for(i64{0}, (count + 4095) / 4096, [&](i64 b) {
    for (i64 i = b * 4096; i < std::min(count, (b + 1) * 4096); ++i) out[static_cast<std::size_t>(i)] = static_cast<float>(data[i]);
  });
  return out;
}

template <class T>
void from_float(const std::vector<float>& in, T* out) {
  const i64 count = static_cast<i64>(in.size());
  tbb::parallel_for(i64{0}, (count + 4095) / 4096, [&](i64 b) {
    for (i64 i = b * 4096; i < std::min(count, (b + 1) * 4096); ++i) out[i] = static_cast<T>(in[static_cast<std::size_t>(i)]);
  });
}

i64 input_size(const Conv2DGeometry& g) { return g.batch * g.in_rows * g.in_cols * g.in_depth; }
i64 output_size(const Conv2DGeometry& g) { return g.batch * g.out_rows * g.out_cols * g.out_depth; }
i64 filter_size(const Conv2DGeometry& g) { return g.filter_rows * g.filter_cols * g.filter_in_depth * g.out_depth; }

}  // namespace

template <class T>
void conv2d_forward(const Conv2DGeometry& g, const T* x, const T* f, T* y) {
  if constexpr (std::is_same_v<T, float>) {
    if (conv2d_fast_path_applies(g)) return conv2d_forward_fast(g, x, f, y);
  } else if constexpr (is_reduced_float_v<T>) {
    if (conv2d_fast_path_applies(g)) {
      std::vector<float> out(static_cast<std::size_t>(output_size(g)));
      conv2d_forward_fast(g, to_float(x, input_size(g)).data(), to_float(f, filter_size(g)).data(), out.data());
      return from_float(out, y);
    }
  }
  conv2d_forward_generic(g, x, f, y);
}

template <class T>
void conv2d_backprop_input(const Conv2DGeometry& g, const T* f, const T* dy, T* dx) {
  if constexpr (std::is_same_v<T, float>) {
    if (conv2d_fast_path_applies(g)) return conv2d_backprop_input_fast(g, f, dy, dx);
  } else if constexpr (is_reduced_float_v<T>) {
    if (conv2d_fast_path_applies(g)) {
      std::vector<float> out(static_cast<std::size_t>(input_size(g)));
      conv2d_backprop_input_fast(g, to_float(f, filter_size(g)).data(), to_float(dy, output_size(g)).data(), out.data());
      return from_float(out, dx);
    }
  }
  conv2d_backprop_input_generic(g, f, dy, dx);
}

template <class T>
void conv2d_backprop_filter(const Conv2DGeometry& g, const T* x, const T* dy, T* df) {
  if constexpr (std::is_same_v<T, float>) {
    if (conv2d_fast_path_applies(g)) return conv2d_backprop_filter_fast(g, x, dy, df);
  } else if constexpr (is_reduced_float_v<T>) {
    if (conv2d_fast_path_applies(g)) {
      std::vector<float> out(static_cast<std::size_t>(filter_size(g)));
      conv2d_backprop_filter_fast(g, to_float(x, input_size(g)).data(), to_float(dy, output_size(g)).data(), out.data());
      return from_float(out, df);
    }
  }
  conv2d_backprop_filter_generic(g, x, dy, df);
}

#define DAGRAD_INSTANTIATE(T)                                                                   \
  template void conv2d_forward<T>(const Conv2DGeometry&, const T*, const T*, T*);              \
  template void conv2d_backprop_input<T>(const Conv2DGeometry&, const T*, const T*, T*);       \
  template void conv2d_backprop_filter<T>(const Conv2DGeometry&, const T*, const T*, T*);
DAGRAD_INSTANTIATE(half)
DAGRAD_INSTANTIATE(bfloat16)
DAGRAD_INSTANTIATE(float)
DAGRAD_INSTANTIATE(double)
#undef DAGRAD_INSTANTIATE

}  // namespace dagrad::cpu
