// Index arithmetic of the CUDA gather kernels (Transpose, BroadcastTo): output element i reads
// input offset unravel_offset(dims, src_stride, rank, i). Plain C++ so the host tests run it too.
#pragma once

#include <cstdint>
#include <vector>

#include "dagrad/backends/cuda/elementwise_index.hpp"

namespace dagrad::cuda {

struct GatherIndex {
  int rank = 0;
  std::int64_t count = 0;
  std::int64_t dims[kMaxRank] = {};
  std::int64_t src_stride[kMaxRank] = {};
};

DAGRAD_HD std::int64_t gather_offset(const GatherIndex& g, std::int64_t linear) {
  return unravel_offset(g.dims, g.src_stride, g.rank, linear);
}

// Builds the index from the output dims and the input stride per output axis. Size-1 axes are
// dropped and an axis merges into the previous one when the two read the input as one axis
// (stride[prev] == stride[a] * dims[a]), so only the merged rank must fit kMaxRank.
inline bool make_gather_index(const std::vector<std::int64_t>& out, const std::vector<std::int64_t>& stride,
                              GatherIndex* g) {
  *g = {};
  g->count = 1;
  for (auto d : out) g->count *= d;
  for (std::size_t a = 0; a < out.size(); ++a) {
    if (out[a] == 1) continue;
    if (g->rank > 0 && g->src_stride[g->rank - 1] == stride[a] * out[a]) {
      g->dims[g->rank - 1] *= out[a];
      g->src_stride[g->rank - 1] = stride[a];
      continue;
    }
    if (g->rank == kMaxRank) return false;
    g->dims[g->rank] = out[a];
    g->src_stride[g->rank] = stride[a];
    ++g->rank;
  }
  return true;
}

// Row-major element strides of `dims`.
inline std::vector<std::int64_t> row_major_strides(const std::vector<std::int64_t>& dims) {
  std::vector<std::int64_t> stride(dims.size(), 1);
  for (auto a = dims.size(); a-- > 1;) stride[a - 1] = stride[a] * dims[a];
  return stride;
}

// y = transpose(x, perm): output axis a is input axis perm[a] (perm already validated).
inline bool make_transpose_gather(const std::vector<std::int64_t>& in, const std::vector<std::int64_t>& perm,
                                  GatherIndex* g) {
  const auto in_stride = row_major_strides(in);
  std::vector<std::int64_t> out(in.size()), stride(in.size());
  for (std::size_t a = 0; a < in.size(); ++a) {
    const auto p = static_cast<std::size_t>(perm[a]);
    out[a] = in[p];
    stride[a] = in_stride[p];
  }
  return make_gather_index(out, stride, g);
}

// y = broadcast_to(x, out): x aligned to the trailing axes of out, stride 0 where x has size 1 or no axis.
inline bool make_broadcast_gather(const std::vector<std::int64_t>& out, const std::vector<std::int64_t>& in,
                                  GatherIndex* g) {
  std::vector<std::int64_t> stride(out.size());
  broadcast_strides(out, in, stride.data());
  return make_gather_index(out, stride, g);
}

// The (outer, size, inner) view of a tensor around one axis: element (o, k, i) is at
// (o * size + k) * inner + i. ArgMax reduces k; the softmax family uses inner == 1.
struct AxisSplit {
  std::int64_t outer = 1, size = 1, inner = 1;
};
inline AxisSplit split_at_axis(const std::vector<std::int64_t>& dims, int axis) {
  AxisSplit s;
  for (int a = 0; a < static_cast<int>(dims.size()); ++a) {
    const auto d = dims[static_cast<std::size_t>(a)];
    if (a < axis)
      s.outer *= d;
    else if (a > axis)
      s.inner *= d;
    else
      s.size = d;
  }
  return s;
}
DAGRAD_HD std::int64_t axis_offset(const AxisSplit& s, std::int64_t o, std::int64_t k, std::int64_t i) {
  return (o * s.size + k) * s.inner + i;
}

}  // namespace dagrad::cuda
