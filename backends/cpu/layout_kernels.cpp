// CPU kernels (oneTBB) that only move elements: Transpose (any rank and perm, every dtype) and
// BroadcastTo. Pure copies, so every split over threads gives the same bits. Transpose first
// drops size-1 axes and merges axes that stay adjacent, then either copies contiguous rows (the
// innermost axis kept) or walks 32x32 tiles of the two axes that are contiguous on each side.
#include <algorithm>
#include <cstring>
#include <vector>

#include <tbb/parallel_for.h>

#include "dagrad/backends/cpu/broadcast.hpp"
#include "dagrad/backends/cpu/register.hpp"
#include "dagrad/core/tensor.hpp"

namespace dagrad::cpu {
namespace {

using i64 = std::int64_t;
constexpr auto kCpu = Device::Kind::CPU;
constexpr i64 kBlock = 32768;  // elements per parallel piece
constexpr i64 kTile = 32;      // transpose tile edge

// Output axes of a transpose after simplification: size and input element stride of each.
struct Axes {
  std::vector<i64> dims, in_stride;
};

Axes simplify(const Shape& in, const std::vector<i64>& perm) {
  const int rank = in.rank();
  std::vector<i64> stride(static_cast<std::size_t>(rank), 1);
  for (int a = rank - 2; a >= 0; --a)
    stride[static_cast<std::size_t>(a)] = stride[static_cast<std::size_t>(a + 1)] * in[a + 1];
  Axes ax;
  for (int a = 0; a < rank; ++a) {
    const int p = static_cast<int>(perm[static_cast<std::size_t>(a)]);
    const i64 d = in[p], s = stride[static_cast<std::size_t>(p)];
    if (d == 1) continue;
    if (!ax.dims.empty() && ax.in_stride.back() == s * d) {
      // Adjacent in the input too: one axis.
      ax.dims.back() *= d;
      ax.in_stride.back() = s;
      continue;
    }
    ax.dims.push_back(d);
    ax.in_stride.push_back(s);
  }
  return ax;
}

// Mixed-radix walk over the axes in `outer` (dims, input strides, output strides).
struct Outer {
  std::vector<i64> dims, in_stride, out_stride;
  i64 count() const {
    i64 n = 1;
    for (i64 d : dims) n *= d;
    return n;
  }
  void offsets(i64 index, i64* in_off, i64* out_off) const {
    i64 a = 0, b = 0;
    for (std::size_t i = dims.size(); i-- > 0;) {
      const i64 k = index % dims[i];
      index /= dims[i];
      a += k * in_stride[i];
      b += k * out_stride[i];
    }
    *in_off = a;
    *out_off = b;
  }
};

template <class T>
void transpose(KernelContext& c) {
  const Tensor& x = c.input(0);
  Tensor& out = c.allocate_output(0);
  const i64 n = out.num_elements();
  if (n == 0) return;
  const T* src = x.data<T>();
  T* dst = out.data<T>();
  const Axes ax = simplify(x.shape(), c.input(1).to_int64_vector());
  const std::size_t rank = ax.dims.size();
  if (rank <= 1) {
    // The identity permutation after simplification: a flat copy.
    tbb::parallel_for(i64{0}, (n + kBlock - 1) / kBlock, [&](i64 b) {
      const i64 begin = b * kBlock;
      std::copy(src + begin, src + std::min(n, begin + kBlock), dst + begin);
    });
    return;
  }
  std::vector<i64> out_stride(rank, 1);
  for (std::size_t a = rank - 1; a-- > 0;) out_stride[a] = out_stride[a + 1] * ax.dims[a + 1];
  const std::size_t last = rank - 1;
  // The output axis that reads the input's contiguous axis (after simplification, exactly one).
  std::size_t j = 0;
  while (ax.in_stride[j] != 1) ++j;
  if (j == last) {
    // The innermost axis is kept: copy contiguous rows.
    const i64 inner = ax.dims[last], rows = n / inner;
    Outer outer{{ax.dims.begin(), ax.dims.end() - 1},
                {ax.in_stride.begin(), ax.in_stride.end() - 1},
                {out_stride.begin(), out_stride.end() - 1}};
    const i64 rows_per_task = std::max<i64>(1, kBlock / inner);
    tbb::parallel_for(i64{0}, (rows + rows_per_task - 1) / rows_per_task, [&](i64 task) {
      const i64 end = std::min(rows, (task + 1) * rows_per_task);
      for (i64 row = task * rows_per_task; row < end; ++row) {
        i64 from = 0, to = 0;
        outer.offsets(row, &from, &to);
        std::copy(src + from, src + from + inner, dst + to);
      }
    });
    return;
  }
  // Tiles over output axis j (input-contiguous) and the last output axis (output-contiguous).
  Outer outer;
  for (std::size_t a = 0; a < last; ++a) {
    if (a == j) continue;
    outer.dims.push_back(ax.dims[a]);
    outer.in_stride.push_back(ax.in_stride[a]);
    outer.out_stride.push_back(out_stride[a]);
  }
  const i64 dj = ax.dims[j], dl = ax.dims[last], sl = ax.in_stride[last], oj = out_stride[j];
  const i64 tiles_j = (dj + kTile - 1) / kTile, tiles_l = (dl + kTile - 1) / kTile;
  tbb::parallel_for(i64{0}, outer.count() * tiles_j * tiles_l, [&](i64 task) {
    const i64 tl = task % tiles_l, tj = task / tiles_l % tiles_j, o = task / (tiles_l * tiles_j);
    i64 from = 0, to = 0;
    outer.offsets(o, &from, &to);
    const i64 j0 = tj * kTile, j1 = std::min(dj, j0 + kTile), l0 = tl * kTile, l1 = std::min(dl, l0 + kTile);
    for (i64 jj = j0; jj < j1; ++jj) {
      const T* s = src + from + jj;
      T* d = dst + to + jj * oj;
      for (i64 l = l0; l < l1; ++l) d[l] = s[l * sl];
    }
  });
}

template <class T>
void broadcast_to(KernelContext& c) {
  const Tensor& in = c.input(0);
  Tensor& out = c.allocate_output(0);
  if (out.num_elements() == 0) return;
  const Broadcast b = plan_broadcast(out.shape(), in.shape(), in.shape());
  const T* src = in.data<T>();
  T* dst = out.data<T>();
  const i64 inner = b.dims.back(), stride = b.sx.back(), rows = out.num_elements() / inner;
  const i64 rows_per_task = std::max<i64>(1, kBlock / inner);
  tbb::parallel_for(i64{0}, (rows + rows_per_task - 1) / rows_per_task, [&](i64 task) {
    const i64 end = std::min(rows, (task + 1) * rows_per_task);
    for (i64 row = task * rows_per_task; row < end; ++row) {
      i64 from = 0, unused = 0;
      b.row_offsets(row, &from, &unused);
      T* d = dst + row * inner;
      if (stride == 0)
        std::fill(d, d + inner, src[from]);
      else
        std::copy(src + from, src + from + inner, d);  // stride 1: merged dims are contiguous
    }
  });
}

}  // namespace

void register_layout_kernels(KernelRegistry& r) {
  add_kernels(r, "Transpose", kCpu, kBackend, kPriority, kSchemaDTypes,
              []<class T>() -> KernelFn { return transpose<T>; });
  add_kernels(r, "BroadcastTo", kCpu, kBackend, kPriority, kSchemaDTypes,
              []<class T>() -> KernelFn { return broadcast_to<T>; });
}

}  // namespace dagrad::cpu
