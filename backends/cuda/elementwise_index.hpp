// Index arithmetic of the CUDA element-wise and reduction kernels: broadcasting offsets and the
// (output, reduced element) -> input offset map. Plain C++ so the host tests run it too.
#pragma once

#include <cstdint>
#include <vector>

#include "dagrad/backends/cuda/hd.hpp"

namespace dagrad::cuda {

inline constexpr int kMaxRank = 8;

// Output of rank `rank` with dims `dims`; x and y strides per output axis, 0 where broadcast.
struct BroadcastIndex {
  int rank = 0;
  std::int64_t count = 0;
  std::int64_t dims[kMaxRank] = {};
  std::int64_t x_stride[kMaxRank] = {};
  std::int64_t y_stride[kMaxRank] = {};
};

// Input offsets of output element `linear` (row-major).
DAGRAD_HD void broadcast_offsets(const BroadcastIndex& b, std::int64_t linear, std::int64_t* x, std::int64_t* y) {
  std::int64_t xo = 0, yo = 0;
  for (int a = b.rank - 1; a >= 0; --a) {
    const std::int64_t i = linear % b.dims[a];
    linear /= b.dims[a];
    xo += i * b.x_stride[a];
    yo += i * b.y_stride[a];
  }
  *x = xo;
  *y = yo;
}

// Strides of `in` aligned to the trailing axes of `out`, 0 on broadcast (size-1 or missing) axes.
inline void broadcast_strides(const std::vector<std::int64_t>& out, const std::vector<std::int64_t>& in,
                              std::int64_t* stride) {
  const auto rank = static_cast<int>(out.size());
  const auto offset = rank - static_cast<int>(in.size());
  std::int64_t s = 1;
  for (int a = rank - 1; a >= 0; --a) {
    const int ia = a - offset;
    if (ia < 0 || in[static_cast<std::size_t>(ia)] == 1) {
      stride[a] = 0;
    } else {
      stride[a] = s;
    }
    if (ia >= 0) s *= in[static_cast<std::size_t>(ia)];
  }
}

// Builds the index for out = broadcast(x, y). Merges adjacent axes that broadcast alike, so any
// rank whose merged form has at most kMaxRank axes works; returns false otherwise.
inline bool make_broadcast_index(const std::vector<std::int64_t>& out, const std::vector<std::int64_t>& x,
                                 const std::vector<std::int64_t>& y, BroadcastIndex* b) {
  const auto rank = out.size();
  std::vector<std::int64_t> xs(rank), ys(rank);
  broadcast_strides(out, x, xs.data());
  broadcast_strides(out, y, ys.data());
  *b = {};
  b->count = 1;
  for (auto d : out) b->count *= d;
  for (std::size_t a = 0; a < rank; ++a) {
    if (out[a] == 1) continue;  // size-1 axes contribute nothing
    if (b->rank > 0) {
      const int p = b->rank - 1;
      // Axis a continues axis p when each input's stride on p equals its stride on a times dims[a].
      const bool x_merges = b->x_stride[p] == xs[a] * out[a];
      const bool y_merges = b->y_stride[p] == ys[a] * out[a];
      if (x_merges && y_merges) {
        b->dims[p] *= out[a];
        b->x_stride[p] = xs[a];
        b->y_stride[p] = ys[a];
        continue;
      }
    }
    if (b->rank == kMaxRank) return false;
    b->dims[b->rank] = out[a];
    b->x_stride[b->rank] = xs[a];
    b->y_stride[b->rank] = ys[a];
    ++b->rank;
  }
  return true;
}

// A 4-d transpose: out axis a is in axis perm[a]. Fills the output dims and, per output axis,
// the input stride, so that unravel_offset(out_dims, src_stride, 4, i) is output i's source.
struct Permute4 {
  std::int64_t count = 0;
  std::int64_t out_dims[4] = {}, src_stride[4] = {};
};
inline Permute4 make_permute4(const std::int64_t in_dims[4], const int perm[4]) {
  Permute4 p;
  std::int64_t in_stride[4];
  in_stride[3] = 1;
  for (int a = 2; a >= 0; --a) in_stride[a] = in_stride[a + 1] * in_dims[a + 1];
  p.count = 1;
  for (int a = 0; a < 4; ++a) {
    p.out_dims[a] = in_dims[perm[a]];
    p.src_stride[a] = in_stride[perm[a]];
    p.count *= p.out_dims[a];
  }
  return p;
}

// Reduction: each output element sums `reduced_count` input elements. Kept axes map the output
// index to a base offset, reduced axes map the reduced index to an offset from it.
struct ReduceIndex {
  int kept_rank = 0, reduced_rank = 0;
  std::int64_t out_count = 0, reduced_count = 0;
  std::int64_t kept_dims[kMaxRank] = {}, kept_stride[kMaxRank] = {};
  std::int64_t reduced_dims[kMaxRank] = {}, reduced_stride[kMaxRank] = {};
};

DAGRAD_HD std::int64_t unravel_offset(const std::int64_t* dims, const std::int64_t* stride, int rank,
                                      std::int64_t linear) {
  std::int64_t offset = 0;
  for (int a = rank - 1; a >= 0; --a) {
    offset += (linear % dims[a]) * stride[a];
    linear /= dims[a];
  }
  return offset;
}

DAGRAD_HD std::int64_t reduce_base(const ReduceIndex& r, std::int64_t out) {
  return unravel_offset(r.kept_dims, r.kept_stride, r.kept_rank, out);
}
DAGRAD_HD std::int64_t reduce_offset(const ReduceIndex& r, std::int64_t j) {
  return unravel_offset(r.reduced_dims, r.reduced_stride, r.reduced_rank, j);
}

// `mask[a]` marks reduced axes. Adjacent axes of one kind merge; false when more than kMaxRank remain.
inline bool make_reduce_index(const std::vector<std::int64_t>& in, const std::vector<bool>& mask, ReduceIndex* r) {
  *r = {};
  r->out_count = 1;
  r->reduced_count = 1;
  std::vector<std::int64_t> stride(in.size());
  std::int64_t s = 1;
  for (auto a = in.size(); a-- > 0;) {
    stride[a] = s;
    s *= in[a];
  }
  for (std::size_t a = 0; a < in.size(); ++a) {
    const bool reduced = mask[a];
    (reduced ? r->reduced_count : r->out_count) *= in[a];
    if (in[a] == 1) continue;
    int& rank = reduced ? r->reduced_rank : r->kept_rank;
    std::int64_t* dims = reduced ? r->reduced_dims : r->kept_dims;
    std::int64_t* strides = reduced ? r->reduced_stride : r->kept_stride;
    if (rank > 0 && strides[rank - 1] == stride[a] * in[a]) {
      dims[rank - 1] *= in[a];
      strides[rank - 1] = stride[a];
      continue;
    }
    if (rank == kMaxRank) return false;
    dims[rank] = in[a];
    strides[rank] = stride[a];
    ++rank;
  }
  return true;
}

}  // namespace dagrad::cuda
