// CPU kernels for Add/AddV2/Sub/Mul (broadcasting), Neg, Reciprocal, AddN, Sum and Mean: split over fixed
// blocks with tbb::parallel_for. Elementwise results do not depend on the split at all; float
// reductions sum in double over fixed chunks combined in chunk order, so they are deterministic.
// One float op on half/bfloat16 operands rounds correctly (float has >= 2p+2 bits for both), so
// binary ops match the reference bit for bit.
#include <algorithm>
#include <vector>

#include <tbb/parallel_for.h>

#include "dagrad/backends/cpu/broadcast.hpp"
#include "dagrad/backends/cpu/register.hpp"
#include "dagrad/core/tensor.hpp"
#include "dagrad/ops/shape_util.hpp"

namespace dagrad::cpu {
namespace {

using i64 = std::int64_t;
constexpr auto kCpu = Device::Kind::CPU;
constexpr i64 kBlock = 16384;  // elements per parallel piece

// Arithmetic type: float for half/bfloat16/float, double for double, unsigned (wrapping) for ints.
template <class T>
struct calc {
  using type = std::uint64_t;
};
template <>
struct calc<half> {
  using type = float;
};
template <>
struct calc<bfloat16> {
  using type = float;
};
template <>
struct calc<float> {
  using type = float;
};
template <>
struct calc<double> {
  using type = double;
};
template <>
struct calc<std::int32_t> {
  using type = std::uint32_t;
};
template <class T>
using calc_t = typename calc<T>::type;
// Sum type of reductions: double for floats, wrapping uint64 for integers (as the reference).
template <class T>
using sum_t = std::conditional_t<is_floating_v<T>, double, std::uint64_t>;

template <class T>
sum_t<T> widen_for_sum(T v) {
  if constexpr (is_floating_v<T>)
    return widen<T>(v);
  else
    return static_cast<std::uint64_t>(v);  // two's complement: sums wrap as the reference's
}
template <class T>
calc_t<T> up(T v) {
  return static_cast<calc_t<T>>(v);
}
template <class T, class W>
T down(W v) {
  if constexpr (is_floating_v<T>)
    return narrow<T>(static_cast<double>(v));
  else
    return static_cast<T>(v);
}

// Calls body(begin, end) over [0, n) in fixed blocks.
template <class F>
void blocks(i64 n, F&& body) {
  tbb::parallel_for(i64{0}, (n + kBlock - 1) / kBlock, [&](i64 b) { body(b * kBlock, std::min(n, (b + 1) * kBlock)); });
}

// The result may overwrite an operand of the output's shape (forward_input_or_allocate_output):
// output element i reads that operand's element i only, before writing.
template <class T, class Op>
void binary(KernelContext& c, Op op) {
  const Tensor& xt = c.input(0);
  const Tensor& yt = c.input(1);
  Tensor& out = c.forward_input_or_allocate_output({0, 1}, 0);
  if (out.num_elements() == 0) return;  // an empty operand's strides may overflow: no plan
  const Broadcast b = plan_broadcast(out.shape(), xt.shape(), yt.shape());
  const T* x = xt.data<T>();
  const T* y = yt.data<T>();
  T* z = out.data<T>();
  const i64 inner = b.dims.back(), isx = b.sx.back(), isy = b.sy.back();
  const i64 rows = out.num_elements() / std::max<i64>(inner, 1);
  const i64 rows_per_task = std::max<i64>(1, kBlock / std::max<i64>(inner, 1));
  tbb::parallel_for(i64{0}, (rows + rows_per_task - 1) / rows_per_task, [&](i64 task) {
    for (i64 row = task * rows_per_task; row < std::min(rows, (task + 1) * rows_per_task); ++row) {
      i64 ox = 0, oy = 0;
      b.row_offsets(row, &ox, &oy);
      const T* xr = x + ox;
      const T* yr = y + oy;
      T* zr = z + row * inner;
      // The three common stride pairs get their own loops so the compiler vectorises them.
      if (isx == 1 && isy == 1) {
        for (i64 i = 0; i < inner; ++i) zr[i] = static_cast<T>(op(up(xr[i]), up(yr[i])));
      } else if (isx == 1 && isy == 0) {
        const auto yv = up(yr[0]);
        for (i64 i = 0; i < inner; ++i) zr[i] = static_cast<T>(op(up(xr[i]), yv));
      } else if (isx == 0 && isy == 1) {
        const auto xv = up(xr[0]);
        for (i64 i = 0; i < inner; ++i) zr[i] = static_cast<T>(op(xv, up(yr[i])));
      } else {
        for (i64 i = 0; i < inner; ++i) zr[i] = static_cast<T>(op(up(xr[i * isx]), up(yr[i * isy])));
      }
    }
  });
}

// Sum over the reduced axes of `in`, viewed as [outer, reduced, inner] when the reduced axes are
// adjacent (after dropping size-1 dims), else through a general odometer per output element.
template <class T>
void reduce(KernelContext& c, bool mean) {
  const Tensor& in = c.input(0);
  const auto mask = ops::reduction_mask(c.input(1).to_int64_vector(), in.rank());
  Tensor& out = c.allocate_output(0);
  const T* x = in.data<T>();
  T* y = out.data<T>();
  using S = sum_t<T>;
  if (out.num_elements() == 0) return;
  // Elements per output; exact, since the output is not empty.
  const i64 red_count = in.num_elements() / out.num_elements();
  auto finish = [&](S total) -> T {
    if (!mean) return down<T>(total);
    if constexpr (is_floating_v<T>)
      return narrow<T>(total / static_cast<double>(red_count));
    else
      return red_count == 0 ? T(0) : static_cast<T>(static_cast<T>(total) / static_cast<T>(red_count));
  };
  if (in.num_elements() == 0) {
    // Every output sums nothing; the strides of an empty input may overflow, so no plan.
    std::fill_n(y, out.num_elements(), finish(S(0)));
    return;
  }
  i64 outer = 1, red = 1, inner = 1;
  int phase = 0;  // 0: before the reduced block, 1: inside it, 2: after it
  bool adjacent = true;
  for (int a = 0; a < in.rank(); ++a) {
    const i64 d = in.shape()[a];
    if (d == 1) continue;
    const bool r = mask[static_cast<std::size_t>(a)];
    if (r && phase == 2) adjacent = false;
    if (r) phase = 1;
    if (!r && phase == 1) phase = 2;
    (r ? red : phase == 0 ? outer : inner) *= d;
  }
  if (!adjacent) {
    // General case: per output element, walk the reduced index space in row-major order.
    std::vector<i64> red_dims, red_strides, keep_dims, keep_strides;
    i64 stride = 1;
    std::vector<i64> strides(static_cast<std::size_t>(in.rank()));
    for (int a = in.rank() - 1; a >= 0; --a) strides[static_cast<std::size_t>(a)] = stride, stride *= in.shape()[a];
    for (int a = 0; a < in.rank(); ++a) {
      (mask[static_cast<std::size_t>(a)] ? red_dims : keep_dims).push_back(in.shape()[a]);
      (mask[static_cast<std::size_t>(a)] ? red_strides : keep_strides).push_back(strides[static_cast<std::size_t>(a)]);
    }
    tbb::parallel_for(i64{0}, out.num_elements(), [&](i64 o) {
      i64 base = 0, rest = o;
      for (int a = static_cast<int>(keep_dims.size()) - 1; a >= 0; --a) {
        base += rest % keep_dims[static_cast<std::size_t>(a)] * keep_strides[static_cast<std::size_t>(a)];
        rest /= keep_dims[static_cast<std::size_t>(a)];
      }
      S total = 0;
      for (i64 r = 0; r < red; ++r) {
        i64 off = base, q = r;
        for (int a = static_cast<int>(red_dims.size()) - 1; a >= 0; --a) {
          off += q % red_dims[static_cast<std::size_t>(a)] * red_strides[static_cast<std::size_t>(a)];
          q /= red_dims[static_cast<std::size_t>(a)];
        }
        total += static_cast<S>(widen_for_sum(x[off]));
      }
      y[o] = finish(total);
    });
    return;
  }
  // [outer, red, inner]: the reduced axis is cut into fixed chunks when there are few outputs,
  // and the chunk partials are added in chunk order.
  const i64 outputs = outer * inner;
  const i64 chunk = outputs >= 4096 ? std::max<i64>(red, 1) : std::max<i64>(kBlock / std::max<i64>(inner, 1), 1);
  const i64 chunks = std::max<i64>((red + chunk - 1) / chunk, 1);
  std::vector<S> partial(static_cast<std::size_t>(chunks * outputs), S(0));
  const i64 inner_block = std::min<i64>(inner, 1024);
  const i64 inner_blocks = (inner + inner_block - 1) / inner_block;
  tbb::parallel_for(i64{0}, chunks * outer * inner_blocks, [&](i64 task) {
    const i64 k = task / (outer * inner_blocks), o = task / inner_blocks % outer, ib = task % inner_blocks;
    const i64 r0 = k * chunk, r1 = std::min(red, r0 + chunk);
    S* p = partial.data() + k * outputs + o * inner;
    const i64 i0 = ib * inner_block, i1 = std::min(inner, i0 + inner_block);
    if (inner == 1) {
      // Eight interleaved running sums, combined in a fixed order: fast and deterministic.
      S lane[8] = {};
      const T* src = x + o * red;
      i64 r = r0;
      for (; r + 8 <= r1; r += 8)
        for (int l = 0; l < 8; ++l) lane[l] += static_cast<S>(widen_for_sum(src[r + l]));
      for (; r < r1; ++r) lane[0] += static_cast<S>(widen_for_sum(src[r]));
      p[0] = ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
      return;
    }
    for (i64 r = r0; r < r1; ++r) {
      const T* src = x + (o * red + r) * inner;
      for (i64 i = i0; i < i1; ++i) p[i] += static_cast<S>(widen_for_sum(src[i]));
    }
  });
  blocks(outputs, [&](i64 b, i64 e) {
    for (i64 i = b; i < e; ++i) {
      S total = partial[static_cast<std::size_t>(i)];
      for (i64 k = 1; k < chunks; ++k) total += partial[static_cast<std::size_t>(k * outputs + i)];
      y[i] = finish(total);
    }
  });
}

// 1 / x. One float division of a half/bfloat16 value rounds correctly (see above), so this
// matches the reference's double division bit for bit. Integer zeros are found before any work,
// so the error is raised on the calling thread, as the reference raises it.
template <class T>
void reciprocal(KernelContext& c) {
  const Tensor& in = c.input(0);
  const T* x = in.data<T>();
  const i64 n = in.num_elements();
  if constexpr (!is_floating_v<T>) {
    if (std::find(x, x + n, T(0)) != x + n) invalid_argument("Reciprocal: Integer division by zero");
  }
  T* y = c.forward_input_or_allocate_output({0}, 0).data<T>();  // y[i] is written after x[i] is read
  blocks(n, [&](i64 b, i64 e) {
    if constexpr (is_floating_v<T>) {
      for (i64 i = b; i < e; ++i) y[i] = static_cast<T>(calc_t<T>(1) / up(x[i]));
    } else {
      for (i64 i = b; i < e; ++i) y[i] = static_cast<T>(T(1) / x[i]);  // signed: 1 / -1 is -1
    }
  });
}

}  // namespace

void register_math_kernels(KernelRegistry& r) {
  for (const char* op : {"Add", "AddV2"}) {
    add_kernels(r, op, kCpu, kBackend, kPriority, kSchemaDTypes, []<class T>() -> KernelFn {
      return [](KernelContext& c) { binary<T>(c, [](auto a, auto b) { return a + b; }); };
    });
  }
  add_kernels(r, "Sub", kCpu, kBackend, kPriority, kSchemaDTypes, []<class T>() -> KernelFn {
    return [](KernelContext& c) { binary<T>(c, [](auto a, auto b) { return a - b; }); };
  });
  add_kernels(r, "Mul", kCpu, kBackend, kPriority, kSchemaDTypes, []<class T>() -> KernelFn {
    return [](KernelContext& c) { binary<T>(c, [](auto a, auto b) { return a * b; }); };
  });
  add_kernels(r, "Neg", kCpu, kBackend, kPriority, kSchemaDTypes, []<class T>() -> KernelFn {
    return [](KernelContext& c) {
      const T* x = c.input(0).data<T>();
      Tensor& out = c.forward_input_or_allocate_output({0}, 0);  // y[i] is written after x[i] is read
      T* y = out.data<T>();
      // -x flips the sign bit (Neg(0) = -0, as in TF); integers wrap.
      blocks(out.num_elements(), [&](i64 b, i64 e) {
        if constexpr (is_floating_v<T>) {
          for (i64 i = b; i < e; ++i) y[i] = static_cast<T>(-up(x[i]));
        } else {
          for (i64 i = b; i < e; ++i) y[i] = static_cast<T>(calc_t<T>(0) - up(x[i]));
        }
      });
    };
  });
  add_kernels(r, "Reciprocal", kCpu, kBackend, kPriority, kSchemaDTypes,
              []<class T>() -> KernelFn { return reciprocal<T>; });
  add_kernels(r, "AddN", kCpu, kBackend, kPriority, kSchemaDTypes, []<class T>() -> KernelFn {
    return [](KernelContext& c) {
      // A block of every input is read before the block of the output is written.
      Tensor& out = c.forward_input_or_allocate_output({0}, 0);
      T* y = out.data<T>();
      // Summed in double (wrapping uint64 for integers) in input order, rounded once.
      blocks(out.num_elements(), [&](i64 b, i64 e) {
        std::vector<sum_t<T>> acc(static_cast<std::size_t>(e - b), sum_t<T>(0));
        for (int k = 0; k < c.num_inputs(); ++k) {
          const T* src = c.input(k).data<T>();
          for (i64 i = b; i < e; ++i)
            acc[static_cast<std::size_t>(i - b)] += static_cast<sum_t<T>>(widen_for_sum(src[i]));
        }
        for (i64 i = b; i < e; ++i) y[i] = down<T>(acc[static_cast<std::size_t>(i - b)]);
      });
    };
  });
  add_kernels(r, "Sum", kCpu, kBackend, kPriority, kSchemaDTypes,
              []<class T>() -> KernelFn { return [](KernelContext& c) { reduce<T>(c, false); }; });
  add_kernels(r, "Mean", kCpu, kBackend, kPriority, kSchemaDTypes,
              []<class T>() -> KernelFn { return [](KernelContext& c) { reduce<T>(c, true); }; });
}

}  // namespace dagrad::cpu
