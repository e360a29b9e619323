// Generic CPU conv kernels: any layout (NHWC or NCHW read in place), groups/depthwise, any
// stride/dilation/padding, all four float dtypes (half/bfloat16 accumulate in float32).
// Work is split over output rows (forward, input gradient) or over fixed pixel chunks whose
// partial sums are added in chunk order (filter gradient), so results are deterministic.
#include <algorithm>
#include <type_traits>
#include <vector>

#include <tbb/parallel_for.h>

#include "dagrad/backends/cpu/conv2d/kernels.hpp"
#include "dagrad/backends/cpu/conv2d/reduction_partials.hpp"
#include "dagrad/backends/cpu/cpu_info.hpp"

namespace dagrad::cpu {
namespace {

using ops::Conv2DGeometry;
using i64 = std::int64_t;

template <class T>
std::vector<accumulator_t<T>> widened(const T* data, i64 count) {
  std::vector<accumulator_t<T>> out(static_cast<std::size_t>(count));
  for (i64 i = 0; i < count; ++i) out[static_cast<std::size_t>(i)] = static_cast<accumulator_t<T>>(data[i]);
  return out;
}

// Input position of tap k for output position o (-1 in the padding), and its transpose.
using ops::conv_input_pos;
using ops::conv_output_pos;

// Calls f(tap, ih, iw) for each filter tap (tap = kh * filter_cols + kw, in that order) through
// which output position (oh, ow) reads a position (ih, iw) inside the input.
// The tap ranges are closed-form: taps in the padding cost nothing, however large the filter.
template <class F>
inline void for_each_input_tap(const Conv2DGeometry& g, i64 oh, i64 ow, F&& f) {
  const ops::TapProgression rows =
      ops::conv_input_taps(oh, g.stride_rows, g.dilation_rows, g.pad_top, g.in_rows, g.filter_rows);
  const ops::TapProgression cols =
      ops::conv_input_taps(ow, g.stride_cols, g.dilation_cols, g.pad_left, g.in_cols, g.filter_cols);
  if (cols.empty()) return;
  for (i64 kh = rows.first; kh <= rows.last; ++kh) {
    const i64 ih = conv_input_pos(oh, kh, g.stride_rows, g.dilation_rows, g.pad_top, g.in_rows);
    for (i64 kw = cols.first; kw <= cols.last; ++kw)
      f(kh * g.filter_cols + kw, ih, conv_input_pos(ow, kw, g.stride_cols, g.dilation_cols, g.pad_left, g.in_cols));
  }
}

}  // namespace

std::int64_t filter_reduction_chunks(std::int64_t pixel_rows, std::int64_t tasks_per_chunk, std::int64_t filter_bytes) {
  // Enough pieces to balance every hardware thread (four each, 8 to 64), counted on the machine,
  // not on the caller's thread count: each chunk costs a partial filter to zero and to sum
  // (measured on Zen 5 with 2 threads: 16 chunks of a 3x3x128x128 bfloat16 filter gradient spent
  // 11% of its time there).
  const i64 kTargetTasks = std::clamp<i64>(4 * cpu_info().online_cpus, 8, 64);
  constexpr i64 kMaxChunks = 16;
  constexpr i64 kPartialBudget = i64{64} << 20;  // bytes of partial sums at most
  i64 chunks = (kTargetTasks + tasks_per_chunk - 1) / std::max<i64>(tasks_per_chunk, 1);
  chunks = std::min({chunks, kMaxChunks, pixel_rows, kPartialBudget / std::max<i64>(filter_bytes, 1)});
  // A multiple of the core count where there are more: 7 chunks on 2 cores left one core idle an
  // eighth of the time (Winograd 28x28x128: 1.65x from 1 to 2 threads).
  const i64 cores = std::max<i64>(cpu_info().online_cpus, 1);
  if (chunks > cores) chunks = chunks / cores * cores;
  return std::max<i64>(chunks, 1);
}

template <class T>
void conv2d_forward_generic(const Conv2DGeometry& g, const T* x, const T* f, T* y) {
  using A = accumulator_t<T>;
  const auto xs = act_strides(g.data_format, g.in_rows, g.in_cols, g.in_depth);
  const auto ys = act_strides(g.data_format, g.out_rows, g.out_cols, g.out_depth);
  const i64 cg = g.filter_in_depth, kg = g.out_depth_per_group(), K = g.out_depth, C = g.in_depth;
  // The filter in A: f itself where T is A (no copy), else widened once.
  std::vector<A> widened_filter;
  if constexpr (!std::is_same_v<T, A>) widened_filter = widened(f, g.filter_rows * g.filter_cols * cg * K);
  const A* fw_data = nullptr;
  if constexpr (std::is_same_v<T, A>)
    fw_data = f;
  else
    fw_data = widened_filter.data();
  tbb::parallel_for(i64{0}, g.batch * g.out_rows, [&](i64 row) {
    const i64 n = row / g.out_rows, oh = row % g.out_rows;
    std::vector<A> acc(static_cast<std::size_t>(K)), xv(static_cast<std::size_t>(C));
    for (i64 ow = 0; ow < g.out_cols; ++ow) {
      std::fill(acc.begin(), acc.end(), A(0));
      for_each_input_tap(g, oh, ow, [&](i64 tap, i64 ih, i64 iw) {
        const T* xp = x + n * xs.n + ih * xs.h + iw * xs.w;
        for (i64 c = 0; c < C; ++c) xv[static_cast<std::size_t>(c)] = static_cast<A>(xp[c * xs.c]);
        const A* ftap = fw_data + tap * cg * K;
        for (i64 grp = 0; grp < g.groups; ++grp) {
          A* a = acc.data() + grp * kg;
          for (i64 ci = 0; ci < cg; ++ci) {
            const A v = xv[static_cast<std::size_t>(grp * cg + ci)];
            const A* fr = ftap + ci * K + grp * kg;
            for (i64 k = 0; k < kg; ++k) a[k] += v * fr[k];
          }
        }
      });
      T* yp = y + n * ys.n + oh * ys.h + ow * ys.w;
      for (i64 k = 0; k < K; ++k) yp[k * ys.c] = static_cast<T>(acc[static_cast<std::size_t>(k)]);
    }
  });
}

template <class T>
void conv2d_backprop_input_generic(const Conv2DGeometry& g, const T* f, const T* dy, T* dx) {
  using A = accumulator_t<T>;
  const auto xs = act_strides(g.data_format, g.in_rows, g.in_cols, g.in_depth);
  const auto ys = act_strides(g.data_format, g.out_rows, g.out_cols, g.out_depth);
  const i64 cg = g.filter_in_depth, kg = g.out_depth_per_group(), K = g.out_depth, C = g.in_depth;
  const i64 taps = g.filter_rows * g.filter_cols;
  // The filter as [tap][k][ci], so the innermost loop runs over contiguous input channels.
  std::vector<A> ft(static_cast<std::size_t>(taps * K * cg));
  for (i64 t = 0; t < taps; ++t)
    for (i64 ci = 0; ci < cg; ++ci)
      for (i64 k = 0; k < K; ++k)
        ft[static_cast<std::size_t>((t * K + k) * cg + ci)] = static_cast<A>(f[(t * cg + ci) * K + k]);
  // The taps that reach an output, in closed form: none is scanned in vain (huge filters, strides).
  const ops::ConvOutputTaps row_taps(g.stride_rows, g.dilation_rows, g.pad_top, g.out_rows, g.filter_rows);
  const ops::ConvOutputTaps col_taps(g.stride_cols, g.dilation_cols, g.pad_left, g.out_cols, g.filter_cols);
  tbb::parallel_for(i64{0}, g.batch * g.in_rows, [&](i64 row) {
    const i64 n = row / g.in_rows, ih = row % g.in_rows;
    const ops::TapProgression khs = row_taps.at(ih);
    std::vector<A> acc(static_cast<std::size_t>(C)), dv(static_cast<std::size_t>(K));
    for (i64 iw = 0; iw < g.in_cols; ++iw) {
      std::fill(acc.begin(), acc.end(), A(0));
      const ops::TapProgression kws = khs.empty() ? ops::TapProgression{} : col_taps.at(iw);
      // Counted loops: first + i * step <= last, where kh += step could overflow (huge strides).
      for (i64 i = 0, nh = kws.empty() ? 0 : khs.count(); i < nh; ++i) {
        const i64 kh = khs.first + i * khs.step;
        const i64 oh = conv_output_pos(ih, kh, g.stride_rows, g.dilation_rows, g.pad_top, g.out_rows);
        for (i64 j = 0, nw = kws.count(); j < nw; ++j) {
          const i64 kw = kws.first + j * kws.step;
          const i64 ow = conv_output_pos(iw, kw, g.stride_cols, g.dilation_cols, g.pad_left, g.out_cols);
          const T* dp = dy + n * ys.n + oh * ys.h + ow * ys.w;
          for (i64 k = 0; k < K; ++k) dv[static_cast<std::size_t>(k)] = static_cast<A>(dp[k * ys.c]);
          const A* ftap = ft.data() + (kh * g.filter_cols + kw) * K * cg;
          for (i64 grp = 0; grp < g.groups; ++grp) {
            A* a = acc.data() + grp * cg;
            for (i64 k = grp * kg; k < (grp + 1) * kg; ++k) {
              const A v = dv[static_cast<std::size_t>(k)];
              const A* fr = ftap + k * cg;
              for (i64 ci = 0; ci < cg; ++ci) a[ci] += v * fr[ci];
            }
          }
        }
      }
      T* xp = dx + n * xs.n + ih * xs.h + iw * xs.w;
      for (i64 c = 0; c < C; ++c) xp[c * xs.c] = static_cast<T>(acc[static_cast<std::size_t>(c)]);
    }
  });
}

template <class T>
void conv2d_backprop_filter_generic(const Conv2DGeometry& g, const T* x, const T* dy, T* df) {
  using A = accumulator_t<T>;
  const auto xs = act_strides(g.data_format, g.in_rows, g.in_cols, g.in_depth);
  const auto ys = act_strides(g.data_format, g.out_rows, g.out_cols, g.out_depth);
  const i64 cg = g.filter_in_depth, kg = g.out_depth_per_group(), K = g.out_depth, C = g.in_depth;
  const i64 fsize = g.filter_rows * g.filter_cols * cg * K;
  const i64 rows = g.batch * g.out_rows;
  const i64 chunks = filter_reduction_chunks(rows, 1, fsize * static_cast<i64>(sizeof(A)));
  const ReductionPartials<A> partial(chunks, fsize);
  tbb::parallel_for(i64{0}, chunks, [&](i64 chunk) {
    A* part = partial.chunk(chunk);
    std::fill_n(part, fsize, A(0));
    std::vector<A> dv(static_cast<std::size_t>(K)), xv(static_cast<std::size_t>(C));
    for (i64 row = rows * chunk / chunks; row < rows * (chunk + 1) / chunks; ++row) {
      const i64 n = row / g.out_rows, oh = row % g.out_rows;
      for (i64 ow = 0; ow < g.out_cols; ++ow) {
        const T* dp = dy + n * ys.n + oh * ys.h + ow * ys.w;
        for (i64 k = 0; k < K; ++k) dv[static_cast<std::size_t>(k)] = static_cast<A>(dp[k * ys.c]);
        for_each_input_tap(g, oh, ow, [&](i64 tap, i64 ih, i64 iw) {
          const T* xp = x + n * xs.n + ih * xs.h + iw * xs.w;
          for (i64 c = 0; c < C; ++c) xv[static_cast<std::size_t>(c)] = static_cast<A>(xp[c * xs.c]);
          A* ptap = part + tap * cg * K;
          for (i64 grp = 0; grp < g.groups; ++grp) {
            const A* d = dv.data() + grp * kg;
            for (i64 ci = 0; ci < cg; ++ci) {
              const A v = xv[static_cast<std::size_t>(grp * cg + ci)];
              A* pr = ptap + ci * K + grp * kg;
              for (i64 k = 0; k < kg; ++k) pr[k] += v * d[k];
            }
          }
        });
      }
    }
  });
  partial.sum_to(df);  // in chunk order: the same order for any number of threads
}

#define DAGRAD_INSTANTIATE(T)                                                                    \
  template void conv2d_forward_generic<T>(const Conv2DGeometry&, const T*, const T*, T*);        \
  template void conv2d_backprop_input_generic<T>(const Conv2DGeometry&, const T*, const T*, T*); \
  template void conv2d_backprop_filter_generic<T>(const Conv2DGeometry&, const T*, const T*, T*);
DAGRAD_INSTANTIATE(half)
DAGRAD_INSTANTIATE(bfloat16)
DAGRAD_INSTANTIATE(float)
DAGRAD_INSTANTIATE(double)
#undef DAGRAD_INSTANTIATE

}  // namespace dagrad::cpu
