// CPU kernels (oneTBB): ArgMax (first maximum along an axis) and Equal (broadcasting, bool out).
// Both compute each output element from its inputs alone in a fixed order, so any split over
// threads gives the same bits. Values compare as the reference compares them: half/bfloat16
// through float (exact), everything else natively.
#include <algorithm>
#include <vector>

#include <tbb/parallel_for.h>

#include "dagrad/backends/cpu/broadcast.hpp"
#include "dagrad/backends/cpu/register.hpp"
#include "dagrad/core/tensor.hpp"

namespace dagrad::cpu {
namespace {

using i64 = std::int64_t;
constexpr auto kCpu = Device::Kind::CPU;
constexpr i64 kBlock = 16384;      // input elements per parallel piece
constexpr i64 kInnerBlock = 1024;  // columns scanned together when the axis is not innermost

// Input viewed as [outer, size, inner] around the reduced axis.
template <class T, class Out>
void arg_max(KernelContext& c) {
  using V = accumulator_t<T>;
  const Tensor& in = c.input(0);
  const int rank = in.rank();
  std::int64_t axis = c.input(1).to_int64_vector().front();
  if (axis < 0) axis += rank;
  Out* y = c.allocate_output(0).data<Out>();
  // The shape function rejects an empty axis, so a non-empty output means a non-empty input,
  // whose dims multiply without overflow (an empty one's may not).
  if (c.output_shape(0).num_elements() == 0) return;
  i64 outer = 1, inner = 1;
  for (int i = 0; i < rank; ++i) {
    if (i < axis)
      outer *= in.shape()[i];
    else if (i > axis)
      inner *= in.shape()[i];
  }
  const i64 size = in.shape()[static_cast<int>(axis)];
  const T* x = in.data<T>();
  if (inner == 1) {
    // One contiguous row per output: the usual [batch, classes] case.
    const i64 rows_per_task = std::max<i64>(1, kBlock / size);
    tbb::parallel_for(i64{0}, (outer + rows_per_task - 1) / rows_per_task, [&](i64 task) {
      const i64 end = std::min(outer, (task + 1) * rows_per_task);
      for (i64 o = task * rows_per_task; o < end; ++o) {
        const T* row = x + o * size;
        V best_value = static_cast<V>(row[0]);
        i64 best = 0;
        for (i64 k = 1; k < size; ++k) {
          const V v = static_cast<V>(row[k]);
          if (v > best_value) best_value = v, best = k;  // strictly greater: the first maximum wins
        }
        y[o] = static_cast<Out>(best);
      }
    });
    return;
  }
  // The axis is strided: scan it for a block of adjacent columns at once (contiguous loads).
  const i64 inner_blocks = (inner + kInnerBlock - 1) / kInnerBlock;
  tbb::parallel_for(i64{0}, outer * inner_blocks, [&](i64 task) {
    const i64 o = task / inner_blocks, i0 = task % inner_blocks * kInnerBlock;
    const i64 width = std::min(kInnerBlock, inner - i0);
    std::vector<V> best_value(static_cast<std::size_t>(width));
    std::vector<i64> best(static_cast<std::size_t>(width), 0);
    const T* base = x + o * size * inner + i0;
    for (i64 i = 0; i < width; ++i) best_value[static_cast<std::size_t>(i)] = static_cast<V>(base[i]);
    for (i64 k = 1; k < size; ++k) {
      const T* row = base + k * inner;
      for (i64 i = 0; i < width; ++i) {
        const V v = static_cast<V>(row[i]);
        if (v > best_value[static_cast<std::size_t>(i)]) {
          best_value[static_cast<std::size_t>(i)] = v;
          best[static_cast<std::size_t>(i)] = k;
        }
      }
    }
    Out* out = y + o * inner + i0;
    for (i64 i = 0; i < width; ++i) out[i] = static_cast<Out>(best[static_cast<std::size_t>(i)]);
  });
}

template <class T>
void equal(KernelContext& c) {
  using V = accumulator_t<T>;
  const Tensor& xt = c.input(0);
  const Tensor& yt = c.input(1);
  Tensor& out = c.allocate_output(0);
  if (out.num_elements() == 0) return;
  const Broadcast b = plan_broadcast(out.shape(), xt.shape(), yt.shape());
  const T* x = xt.data<T>();
  const T* y = yt.data<T>();
  bool* z = out.data<bool>();
  const i64 inner = b.dims.back(), isx = b.sx.back(), isy = b.sy.back();
  const i64 rows = out.num_elements() / inner;
  const i64 rows_per_task = std::max<i64>(1, kBlock / inner);
  tbb::parallel_for(i64{0}, (rows + rows_per_task - 1) / rows_per_task, [&](i64 task) {
    const i64 end = std::min(rows, (task + 1) * rows_per_task);
    for (i64 row = task * rows_per_task; row < end; ++row) {
      i64 ox = 0, oy = 0;
      b.row_offsets(row, &ox, &oy);
      const T* xr = x + ox;
      const T* yr = y + oy;
      bool* zr = z + row * inner;
      if (isx == 1 && isy == 1) {
        for (i64 i = 0; i < inner; ++i) zr[i] = static_cast<V>(xr[i]) == static_cast<V>(yr[i]);
      } else if (isy == 0) {
        const V yv = static_cast<V>(yr[0]);
        for (i64 i = 0; i < inner; ++i) zr[i] = static_cast<V>(xr[i * isx]) == yv;
      } else {
        for (i64 i = 0; i < inner; ++i) zr[i] = static_cast<V>(xr[i * isx]) == static_cast<V>(yr[i * isy]);
      }
    }
  });
}

}  // namespace

void register_compare_kernels(KernelRegistry& r) {
  add_kernels(r, "ArgMax", kCpu, kBackend, kPriority, kSchemaDTypes, []<class T>() -> KernelFn {
    return [](KernelContext& c) {
      if (c.output_dtype(0) == DType::Int32)
        arg_max<T, std::int32_t>(c);
      else
        arg_max<T, std::int64_t>(c);
    };
  });
  add_kernels(r, "Equal", kCpu, kBackend, kPriority, kSchemaDTypes, []<class T>() -> KernelFn { return equal<T>; });
}

}  // namespace dagrad::cpu
