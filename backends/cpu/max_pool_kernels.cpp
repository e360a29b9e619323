// CPU kernels (oneTBB): MaxPool, MaxPoolGrad (and _MaxPoolGradReluGrad, ReluGrad's mask on its
// result) and MaxPoolGradGrad for every float dtype (half and bfloat16 compare in float). Forward
// windows run in parallel over (image, output row); MaxPoolGrad scatters per image in a fixed
// order, so results never depend on the thread count. Every kernel returns at once on an empty
// output: its loops over batch or rows could otherwise run over rows of nothing.
// A window's max is its first maximal element in row-major order (TF's rule, as the reference).
// An empty window (EXPLICIT padding over an input with no rows or columns) has no max: MaxPool
// gives the lowest finite value there, as TF's CPU kernel, and the gradients route nothing.
#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include <tbb/parallel_for.h>

#include "dagrad/backends/cpu/avx512_target.hpp"
#include "dagrad/backends/cpu/branch_free.hpp"
#include "dagrad/backends/cpu/float_buffer.hpp"
#include "dagrad/backends/cpu/pool_windows.hpp"
#include "dagrad/backends/cpu/register.hpp"

namespace dagrad::cpu {
namespace {

using i64 = std::int64_t;
using ops::Pool2DGeometry;
using namespace pool;  // the window helpers of pool_windows.hpp
constexpr auto kCpu = Device::Kind::CPU;

// An element as its accumulator type. bfloat16 widens by a shift (its bits are float32's upper
// half), which GCC vectorises and Eigen's cast is not; the value is the same.
template <class T>
accumulator_t<T> widen_element(T v) {
  if constexpr (std::is_same_v<T, bfloat16>) {
    return std::bit_cast<float>(static_cast<std::uint32_t>(std::bit_cast<std::uint16_t>(v)) << 16);
  } else {
    return static_cast<accumulator_t<T>>(v);
  }
}

// For each output element of row (n, orow): visit(output offset, max value, input offset of the
// window's first maximum, or -1 for an empty window). The channel loop is innermost (contiguous in
// NHWC) and branch-free: a value replaces the best only when strictly greater (the first maximum
// wins, and a NaN never replaces), so with WithIndex false it compiles to packed max instructions.
template <bool WithIndex, class T, class Visit>
[[gnu::always_inline]] inline void max_row(const Pool2DGeometry& g, i64 n, i64 orow, const T* x, Visit&& visit) {
  using A = accumulator_t<T>;
  const i64 ds = in_depth_stride(g), ods = out_depth_stride(g);
  std::vector<A> best_value(static_cast<std::size_t>(g.depth));
  std::vector<i64> best_index(WithIndex ? static_cast<std::size_t>(g.depth) : 0);
  A* bv = best_value.data();
  i64* bi = best_index.data();
  const Span rows = window(orow, g.stride_rows, g.pad_top, g.window_rows, g.rows);
  for (i64 ocol = 0; ocol < g.out_cols; ++ocol) {
    const Span cols = window(ocol, g.stride_cols, g.pad_left, g.window_cols, g.cols);
    const i64 out = g.out_offset(n, orow, ocol, 0);
    if (rows.begin >= rows.end || cols.begin >= cols.end) {
      for (i64 d = 0; d < g.depth; ++d) visit(out + d * ods, A(0), i64{-1});
      continue;
    }
    const i64 first = g.in_offset(n, rows.begin, cols.begin, 0);
    for (i64 d = 0; d < g.depth; ++d) {
      bv[d] = widen_element(x[first + d * ds]);
      if constexpr (WithIndex) bi[d] = first + d * ds;
    }
    for (i64 r = rows.begin; r < rows.end; ++r) {
      for (i64 col = cols.begin; col < cols.end; ++col) {
        const i64 base = g.in_offset(n, r, col, 0);
        const T* p = x + base;
        const auto update = [&](i64 d, i64 step) {
          const A v = widen_element(p[d * step]);
          const bool greater = v > bv[d];
          if constexpr (WithIndex) {  // branch_free.hpp: GCC branched here, mispredicting
            bv[d] = select_bits(greater, v, bv[d]);
            bi[d] = select_bits(greater, base + d * step, bi[d]);
          } else {
            bv[d] = greater ? v : bv[d];  // packed max instructions
          }
        };
        if (ds == 1) {
          for (i64 d = 0; d < g.depth; ++d) update(d, 1);
        } else {
          for (i64 d = 0; d < g.depth; ++d) update(d, ds);
        }
      }
    }
    for (i64 d = 0; d < g.depth; ++d) visit(out + d * ods, bv[d], WithIndex ? bi[d] : i64{0});
  }
}

// N consecutive elements as accumulator_t<T> lanes in registers: bfloat16 widened by its shift.
// The vectors pass by reference: as values they would change the ABI of the baseline compilation.
template <int N, class T>
[[gnu::always_inline]] inline void load_wide(const T* p, GccVector<accumulator_t<T>, N>& v) {
  if constexpr (std::is_same_v<T, bfloat16>) {
    GccVector<std::uint16_t, N> bits;
    std::memcpy(&bits, p, sizeof bits);
    const auto wide = __builtin_convertvector(bits, GccVector<std::uint32_t, N>) << 16;
    std::memcpy(&v, &wide, sizeof v);
  } else {
    static_assert(std::is_same_v<T, accumulator_t<T>>);
    std::memcpy(&v, p, sizeof v);
  }
}

// The inverse for lanes that are T values (inputs, +-0, or a product of one with 1 or 0): a
// bfloat16 narrows by truncation, exact there, and a NaN as sign | 0x7fc0, as rounding gives it.
template <int N, class T>
[[gnu::always_inline]] inline void store_exact(const GccVector<accumulator_t<T>, N>& v, T* p) {
  if constexpr (std::is_same_v<T, bfloat16>) {
    GccVector<std::uint32_t, N> u;
    std::memcpy(&u, &v, sizeof u);
    const auto narrowed = v != v ? ((u >> 16) & 0x8000u) | 0x7fc0u : u >> 16;
    const auto bits = __builtin_convertvector(narrowed, GccVector<std::uint16_t, N>);
    std::memcpy(static_cast<void*>(p), &bits, sizeof bits);
  } else {
    std::memcpy(p, &v, sizeof v);
  }
}

// ReluGrad's factor: 1 where the feature is above 0, else 0 (NaN included). Half features (with
// float32 values) by their bits: the values above 0 are exactly the patterns 1 to +Inf's.
template <int N, class A, class F>
[[gnu::always_inline]] inline void positive_as_one(const F* f, GccVector<A, N>& factor) {
  using Vec = GccVector<A, N>;
  const Vec one = Vec{} + A(1);
  if constexpr (std::is_same_v<F, half>) {
    GccVector<std::uint16_t, N> bits;
    std::memcpy(&bits, f, sizeof bits);
    const auto infinity = std::bit_cast<std::uint16_t>(std::numeric_limits<F>::infinity());
    const auto positive = static_cast<GccVector<std::uint16_t, N>>(bits - 1) < infinity;
    factor = __builtin_convertvector(positive, GccVector<BitsOf<A>, N>) != 0 ? one : Vec{};
  } else {
    static_assert(std::is_same_v<accumulator_t<F>, A>);
    Vec v;
    load_wide<N>(f, v);
    factor = v > Vec{} ? one : Vec{};
  }
}

// The maxima of channels [d0, d0 + N) of one NHWC window (rows x cols, not empty) into y, kept in
// registers across the window (max_row keeps them in memory, and stalled on storing them: 76% of
// MaxPool's time on train_cnn's first pool). Same rule: strictly greater replaces, NaN never does.
// T is float or double, or bfloat16 compared as float (each maximum is an input value, so it
// narrows back exactly). N channels as one GCC vector (GCC left a loop of N scalars unvectorised).
template <int N, class T>
[[gnu::always_inline]] inline void max_block(const Pool2DGeometry& g, const T* x, i64 n, Span rows, Span cols, i64 d0,
                                             T* y) {
  GccVector<accumulator_t<T>, N> best, v;  // locals only (avx512_target.hpp)
  load_wide<N>(x + g.in_offset(n, rows.begin, cols.begin, d0), best);
  for (i64 r = rows.begin; r < rows.end; ++r) {
    for (i64 col = cols.begin; col < cols.end; ++col) {
      load_wide<N>(x + g.in_offset(n, r, col, d0), v);
      best = v > best ? v : best;  // packed max instructions
    }
  }
  store_exact<N>(best, y);  // input elements
}

// MaxPool's output row (n, orow) in Out (T, or float for widened half input); an empty window
// gives T's lowest finite value, as TF's CPU kernel. NHWC float, double and bfloat16 (the NHWC
// half input arrives widened) in blocks of 16 channels, then one at a time.
template <class Lowest, class T, class Out>
[[gnu::always_inline]] inline void max_pool_row(const Pool2DGeometry& g, const T* x, Out* y, i64 n, i64 orow) {
  const Out lowest = static_cast<Out>(std::numeric_limits<Lowest>::lowest());
  if constexpr (std::is_same_v<T, Out> && (std::is_floating_point_v<T> || std::is_same_v<T, bfloat16>)) {
    if (!g.nchw) {
      constexpr i64 kBlock = 16;
      const Span rows = window(orow, g.stride_rows, g.pad_top, g.window_rows, g.rows);
      for (i64 ocol = 0; ocol < g.out_cols; ++ocol) {
        const Span cols = window(ocol, g.stride_cols, g.pad_left, g.window_cols, g.cols);
        Out* out = y + g.out_offset(n, orow, ocol, 0);
        if (rows.begin >= rows.end || cols.begin >= cols.end) {
          std::fill_n(out, g.depth, lowest);
          continue;
        }
        i64 d0 = 0;
        for (; d0 + kBlock <= g.depth; d0 += kBlock) max_block<kBlock>(g, x, n, rows, cols, d0, out + d0);
        for (; d0 < g.depth; ++d0) max_block<1>(g, x, n, rows, cols, d0, out + d0);
      }
      return;
    }
  }
  max_row<false>(g, n, orow, x, [&](i64 o, accumulator_t<T> value, i64 k) {
    y[o] = k < 0 ? lowest : static_cast<Out>(value);  // value is an input element: exact
  });
}
template <class Lowest, class T, class Out>
void max_pool_row_baseline(const Pool2DGeometry& g, const T* x, Out* y, i64 n, i64 orow) {
  max_pool_row<Lowest>(g, x, y, n, orow);
}
template <class Lowest, class T, class Out>
DAGRAD_AVX512_TARGET void max_pool_row_avx512(const Pool2DGeometry& g, const T* x, Out* y, i64 n, i64 orow) {
  max_pool_row<Lowest>(g, x, y, n, orow);
}

template <class Lowest, class T, class Out>
void max_pool_rows(const Pool2DGeometry& g, const T* x, Out* y) {
  const auto row = use_avx512() ? &max_pool_row_avx512<Lowest, T, Out> : &max_pool_row_baseline<Lowest, T, Out>;
  parallel_out_rows(g, [&](i64 n, i64 orow) { row(g, x, y, n, orow); });
}

template <class T>
void max_pool(KernelContext& c) {
  const auto g = geometry(c, c.input(0).shape());
  const T* x = c.input(0).data<T>();
  T* y = c.allocate_output(0).data<T>();
  const i64 outputs = c.output_shape(0).num_elements();
  if (outputs == 0) return;
  if constexpr (std::is_same_v<T, half>) {
    if (!g.nchw) {  // widened whole (see max_pool_grad): exact both ways, 16-bit loops stayed scalar
      const FloatBuffer wide = to_float(x, c.input(0).num_elements());
      FloatBuffer pooled(outputs);
      max_pool_rows<T>(g, wide.data(), pooled.data());
      return from_float(pooled, y);
    }
  }
  max_pool_rows<T>(g, x, y);
}

template <class T>
void max_pool_grad_grad(KernelContext& c) {
  const auto g = geometry(c, c.input(0).shape());
  const T* x = c.input(0).data<T>();
  const T* grad = c.input(2).data<T>();
  T* y = c.allocate_output(0).data<T>();
  if (c.output_shape(0).num_elements() == 0) return;
  parallel_out_rows(g, [&](i64 n, i64 orow) {
    max_row<true>(g, n, orow, x, [&](i64 o, accumulator_t<T>, i64 k) { y[o] = k < 0 ? T(0) : grad[k]; });
  });
}

// The input rows (or columns) [begin, end) that output position o's window may claim: from its
// window's start to the next window's, the first from 0 and the last to the end.
Span band(i64 o, i64 stride, i64 pad, i64 out_size, i64 extent) {
  const auto start = [&](i64 p) {
    return p == 0 ? 0 : p == out_size ? extent : std::clamp(p * stride - pad, i64{0}, extent);
  };
  return {start(o), start(o + 1)};
}

// MaxPoolGrad in NHWC where windows do not overlap (strides at least the window): each input
// element lies in at most one window, so each is written once, with no zero fill, no accumulator
// and no scatter: its window's gradient where it is the window's first maximum, else zero. Tasks
// are output rows, each owning its band of input rows. The value written is 0 + gradient, as the
// accumulating kernel's (a gradient of -0 lands as +0); half and bfloat16 round it exactly.
// max_grad_block: channels [d0, d0 + N) of one window (not empty) in registers (loops over
// vectors in memory stalled on their stores, as MaxPool's did), each value multiplied by
// features > 0 where features are given (_MaxPoolGradReluGrad) before it is stored: ReluGrad's
// product on MaxPoolGrad's value, which the store's exact narrowing does not change.
template <int N, class T, class F>
[[gnu::always_inline]] inline void max_grad_block(const Pool2DGeometry& g, const T* x, const T* grad, const F* features,
                                                  T* dx, i64 n, i64 orow, i64 ocol, Span rows, Span cols, i64 d0) {
  using A = accumulator_t<T>;
  using Vec = GccVector<A, N>;
  // The window's first maximum per channel, by its element number in row-major order (integer
  // lanes of the values' width; callers keep windows below 2^24 elements). The first element
  // compares equal to itself, so it starts the search with number 0.
  using Number = std::make_signed_t<BitsOf<A>>;
  Vec best, v;
  GccVector<Number, N> winner{};
  load_wide<N>(x + g.in_offset(n, rows.begin, cols.begin, d0), best);
  Number number = 0;
  for (i64 r = rows.begin; r < rows.end; ++r) {
    for (i64 col = cols.begin; col < cols.end; ++col, ++number) {
      load_wide<N>(x + g.in_offset(n, r, col, d0), v);
      const auto greater = v > best;
      best = greater ? v : best;
      winner = greater ? GccVector<Number, N>{} + number : winner;
    }
  }
  Vec gradient, factor;
  load_wide<N>(grad + g.out_offset(n, orow, ocol, d0), gradient);
  gradient = Vec{} + gradient;  // 0 + g: -0 lands as +0
  number = 0;
  for (i64 r = rows.begin; r < rows.end; ++r) {
    for (i64 col = cols.begin; col < cols.end; ++col, ++number) {
      const i64 at = g.in_offset(n, r, col, d0);
      Vec out = winner == number ? gradient : Vec{};  // a select: the gradient's bits
      if (features != nullptr) {
        positive_as_one<N, A>(features + at, factor);
        out *= factor;  // ReluGrad's multiply
      }
      store_exact<N>(out, dx + at);
    }
  }
}

// One output row's windows, channels in blocks of 16 (then one at a time), and the input elements
// of its band that no window covers set to 0.
template <class T, class F>
[[gnu::always_inline]] inline void max_pool_grad_disjoint_row(const Pool2DGeometry& g, const T* x, const T* grad,
                                                              const F* features, T* dx, i64 n, i64 orow) {
  const i64 depth = g.depth, row = g.cols * depth;
  const Span rows = window(orow, g.stride_rows, g.pad_top, g.window_rows, g.rows);
  const Span row_band = band(orow, g.stride_rows, g.pad_top, g.out_rows, g.rows);
  for (i64 r = row_band.begin; r < row_band.end; ++r) {
    if (r < rows.begin || r >= rows.end) std::fill_n(dx + g.in_offset(n, r, 0, 0), row, T(0));
  }
  if (rows.begin >= rows.end) return;
  for (i64 ocol = 0; ocol < g.out_cols; ++ocol) {
    const Span cols = window(ocol, g.stride_cols, g.pad_left, g.window_cols, g.cols);
    const Span col_band = band(ocol, g.stride_cols, g.pad_left, g.out_cols, g.cols);
    for (i64 r = rows.begin; r < rows.end; ++r) {
      for (i64 col = col_band.begin; col < col_band.end; ++col) {
        if (col < cols.begin || col >= cols.end) std::fill_n(dx + g.in_offset(n, r, col, 0), depth, T(0));
      }
    }
    if (cols.begin >= cols.end) continue;
    constexpr i64 kBlock = 16;
    i64 d0 = 0;
    for (; d0 + kBlock <= depth; d0 += kBlock)
      max_grad_block<kBlock>(g, x, grad, features, dx, n, orow, ocol, rows, cols, d0);
    for (; d0 < depth; ++d0) max_grad_block<1>(g, x, grad, features, dx, n, orow, ocol, rows, cols, d0);
  }
}

// ReluGrad's arithmetic (nn_kernels.cpp), in place: y = y * (features > 0), so that a NaN or Inf
// gradient where features <= 0 gives NaN, as TF's multiply does. F may be T's 16-bit type where y
// holds its float32 widening.
template <class T, class F>
[[gnu::always_inline]] inline void relu_grad_mask(T* __restrict y, const F* __restrict features, i64 count) {
  using A = accumulator_t<T>;
  if constexpr (std::is_same_v<T, float> && is_reduced_float_v<F>) {
    // On the features' bits, which GCC vectorises (it keeps loads of F's class scalar): the values
    // above 0 are exactly the patterns 1 to +Inf's.
    const auto* bits = reinterpret_cast<const std::uint16_t*>(features);
    const auto infinity = std::bit_cast<std::uint16_t>(std::numeric_limits<F>::infinity());
    for (i64 i = 0; i < count; ++i) y[i] = y[i] * one_if<float>(static_cast<std::uint16_t>(bits[i] - 1) < infinity);
  } else {
    for (i64 i = 0; i < count; ++i)
      y[i] = static_cast<T>(widen_element(y[i]) * one_if<A>(widen_element(features[i]) > A(0)));
  }
}

template <class T, class F>
void max_pool_grad_disjoint_baseline(const Pool2DGeometry& g, const T* x, const T* grad, const F* features, T* dx,
                                     i64 n, i64 orow) {
  max_pool_grad_disjoint_row(g, x, grad, features, dx, n, orow);
}
template <class T, class F>
DAGRAD_AVX512_TARGET void max_pool_grad_disjoint_avx512(const Pool2DGeometry& g, const T* x, const T* grad,
                                                        const F* features, T* dx, i64 n, i64 orow) {
  max_pool_grad_disjoint_row(g, x, grad, features, dx, n, orow);
}

template <class T, class F>
void max_pool_grad_disjoint(const Pool2DGeometry& g, const T* x, const T* grad, const F* features, T* dx) {
  const auto row = use_avx512() ? &max_pool_grad_disjoint_avx512<T, F> : &max_pool_grad_disjoint_baseline<T, F>;
  parallel_out_rows(g, [&](i64 n, i64 orow) { row(g, x, grad, features, dx, n, orow); });
}

// One task per image: finds each window's max and adds its gradient there, in output-row order
// (accumulating in float for half/bfloat16). Windows of one image touch only that image, and no
// buffer of max locations is needed (fresh pages cost more here than the arithmetic).
// _MaxPoolGradReluGrad passes ReluGrad's features: the result is then multiplied by features > 0
// as ReluGrad would on MaxPoolGrad's output (after its rounding to T), in the task that wrote it.
template <class T>
void max_pool_grad(KernelContext& c, const T* features = nullptr) {
  using A = accumulator_t<T>;
  const auto g = geometry(c, c.input(0).shape());
  const T* x = c.input(0).data<T>();
  const T* grad = c.input(2).data<T>();
  T* dx = c.allocate_output(0).data<T>();
  if (c.output_shape(0).num_elements() == 0) return;
  if (!g.nchw && g.stride_rows >= g.window_rows && g.stride_cols >= g.window_cols && g.window_rows <= 4096 &&
      g.window_cols <= 4096) {  // element numbers below 2^24 (max_grad_block)
    if constexpr (std::is_same_v<T, half>) {
      // Widened whole (no vector conversion of half without F16C's target). Exact both ways: the
      // inputs widen exactly, and the float32 kernel writes 0 + gradient or 0, which narrow as the
      // accumulating kernel's results do.
      const FloatBuffer wide_x = to_float(x, c.input(0).num_elements());
      const FloatBuffer wide_grad = to_float(grad, c.input(2).num_elements());
      // The mask applies to the float32 results before they narrow: each is 0 + a gradient of T
      // or 0, so it narrows exactly and the product is the one ReluGrad forms after narrowing.
      FloatBuffer wide_dx(c.output_shape(0).num_elements());
      max_pool_grad_disjoint(g, wide_x.data(), wide_grad.data(), features, wide_dx.data());
      return from_float(wide_dx, dx);
    } else {
      return max_pool_grad_disjoint(g, x, grad, features, dx);
    }
  }
  const i64 image = g.rows * g.cols * g.depth;
  tbb::parallel_for(i64{0}, g.batch, [&](i64 n) {
    std::vector<A> scratch;
    A* acc = nullptr;
    if constexpr (std::is_same_v<A, T>) {
      acc = dx + n * image;
    } else {
      scratch.resize(static_cast<std::size_t>(image));
      acc = scratch.data();
    }
    std::fill(acc, acc + image, A(0));
    for (i64 orow = 0; orow < g.out_rows; ++orow) {
      max_row<true>(g, n, orow, x, [&](i64 o, A, i64 k) {
        if (k >= 0) acc[k - n * image] += static_cast<A>(grad[o]);
      });
    }
    if constexpr (!std::is_same_v<A, T>) {
      for (i64 i = 0; i < image; ++i) dx[n * image + i] = static_cast<T>(acc[i]);
    }
    if (features) relu_grad_mask(dx + n * image, features + n * image, image);
  });
}

template <class T>
void max_pool_grad_relu_grad(KernelContext& c) {
  max_pool_grad<T>(c, c.input(3).data<T>());
}

}  // namespace

void register_max_pool_kernels(KernelRegistry& r) {
  add_kernels(r, "MaxPool", kCpu, kBackend, kPriority, kSchemaDTypes,
              float_kernels([]<class T>() -> KernelFn { return max_pool<T>; }));
  add_kernels(r, "MaxPoolGrad", kCpu, kBackend, kPriority, kSchemaDTypes,
              float_kernels([]<class T>() -> KernelFn { return [](KernelContext& c) { max_pool_grad<T>(c); }; }));
  add_kernels(r, "_MaxPoolGradReluGrad", kCpu, kBackend, kPriority, kSchemaDTypes,
              float_kernels([]<class T>() -> KernelFn { return max_pool_grad_relu_grad<T>; }));
  add_kernels(r, "MaxPoolGradGrad", kCpu, kBackend, kPriority, kSchemaDTypes,
              float_kernels([]<class T>() -> KernelFn { return max_pool_grad_grad<T>; }));
}

}  // namespace dagrad::cpu
