// The index arithmetic of the CUDA gather (Transpose, BroadcastTo), ArgMax and pooling kernels,
// run on the host: gather offsets against the definitions, and the pooling kernels' loops (window
// argmax, gather-form gradients) emulated element by element and compared exactly with the
// reference kernels.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "dagrad/backends/cuda/gather_index.hpp"
#include "dagrad/backends/cuda/pool_index.hpp"
#include "dagrad/core/eager.hpp"
#include "dagrad/core/tensor.hpp"
#include "dagrad/ops/pooling_ops.hpp"
#include "support/index_math.hpp"
#include "support/pool_cases.hpp"

namespace {

using namespace dagrad;
using namespace dagrad::cuda;
using i64 = std::int64_t;

using testing::product;
using testing::ravel;
using testing::unravel;

}  // namespace

TEST_CASE("cuda transpose gather reads the permuted input index", "[cuda-host]") {
  std::mt19937 rng(21);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int checked = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const int rank = pick(0, 10);  // beyond kMaxRank: only merged axes must fit
    std::vector<i64> in(static_cast<std::size_t>(rank));
    for (auto& d : in) d = pick(0, 12) == 0 ? 0 : pick(1, 3);
    std::vector<i64> perm(static_cast<std::size_t>(rank));
    std::iota(perm.begin(), perm.end(), 0);
    if (pick(0, 3) != 0) std::shuffle(perm.begin(), perm.end(), rng);  // else the identity: one merged axis
    GatherIndex g;
    if (!make_transpose_gather(in, perm, &g)) {
      REQUIRE(rank > kMaxRank);
      continue;
    }
    std::vector<i64> out(in.size());
    for (std::size_t a = 0; a < in.size(); ++a) out[a] = in[static_cast<std::size_t>(perm[a])];
    REQUIRE(g.count == product(out));
    REQUIRE(g.rank <= kMaxRank);
    for (i64 i = 0; i < g.count; ++i) {
      const auto oi = unravel(i, out);
      std::vector<i64> ii(in.size());
      for (std::size_t a = 0; a < in.size(); ++a) ii[static_cast<std::size_t>(perm[a])] = oi[a];
      REQUIRE(gather_offset(g, i) == ravel(ii, in));
    }
    ++checked;
  }
  CHECK(checked > 200);
  // Reversing 9 axes of size 2 leaves 9 axes no merge can join: refused, not truncated.
  GatherIndex g;
  CHECK_FALSE(make_transpose_gather(std::vector<i64>(9, 2), {8, 7, 6, 5, 4, 3, 2, 1, 0}, &g));
}

TEST_CASE("cuda broadcast_to gather follows numpy broadcasting", "[cuda-host]") {
  std::mt19937 rng(22);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int trial = 0; trial < 300; ++trial) {
    const int rank = pick(0, 10);
    std::vector<i64> out(static_cast<std::size_t>(rank));
    for (auto& d : out) d = pick(1, 3);
    std::vector<i64> in = out;
    for (auto& d : in) d = pick(0, 2) == 0 ? 1 : d;
    in.erase(in.begin(), in.begin() + pick(0, rank));  // fewer axes: aligned to the right
    GatherIndex g;
    if (!make_broadcast_gather(out, in, &g)) continue;
    REQUIRE(g.count == product(out));
    const auto lead = out.size() - in.size();
    for (i64 i = 0; i < g.count; ++i) {
      const auto oi = unravel(i, out);
      std::vector<i64> ii(in.size());
      for (std::size_t a = 0; a < in.size(); ++a) ii[a] = in[a] == 1 ? 0 : oi[a + lead];
      REQUIRE(gather_offset(g, i) == ravel(ii, in));
    }
  }
}

TEST_CASE("cuda ArgMax axis split addresses (outer, axis, inner)", "[cuda-host]") {
  const std::vector<i64> dims{2, 3, 4, 5};
  for (int axis = 0; axis < 4; ++axis) {
    const AxisSplit s = split_at_axis(dims, axis);
    REQUIRE(s.outer * s.size * s.inner == product(dims));
    REQUIRE(s.size == dims[static_cast<std::size_t>(axis)]);
    for (i64 o = 0; o < s.outer; ++o) {
      for (i64 k = 0; k < s.size; ++k) {
        for (i64 i = 0; i < s.inner; ++i) {
          auto idx = unravel(axis_offset(s, o, k, i), dims);
          CHECK(idx[static_cast<std::size_t>(axis)] == k);
        }
      }
    }
  }
}

TEST_CASE("cuda pooling: the covering windows of an input are exactly those that hold it", "[cuda-host]") {
  for (i64 size = 1; size <= 9; ++size) {
    for (i64 window = 1; window <= 4; ++window) {
      for (i64 stride = 1; stride <= 3; ++stride) {
        for (i64 pad = 0; pad < window; ++pad) {
          const i64 out = (size + 2 * pad - window) / stride + 1;
          if (out <= 0) continue;
          for (i64 i = 0; i < size; ++i) {
            const PoolRange cover = pool_covering(i, stride, pad, window, out);
            for (i64 o = 0; o < out; ++o) {
              const PoolRange w = pool_window(o, stride, pad, window, size);
              const bool holds = w.begin <= i && i < w.end;
              INFO("size " << size << " window " << window << " stride " << stride << " pad " << pad << " i " << i
                           << " o " << o);
              REQUIRE(holds == (cover.begin <= o && o < cover.end));
            }
          }
        }
      }
    }
  }
}

namespace {

// The pooling kernels of pooling.cu, emulated one thread at a time with the same index helpers.
struct PoolEmulation {
  PoolIndex g;
  const double* x;

  i64 argmax(i64 o) const {
    const PoolPos out = pool_unravel(g.nchw, g.out_rows, g.out_cols, g.depth, o);
    const PoolRange rows = pool_window(out.row, g.stride_rows, g.pad_top, g.window_rows, g.rows);
    const PoolRange cols = pool_window(out.col, g.stride_cols, g.pad_left, g.window_cols, g.cols);
    i64 best = -1;
    for (i64 r = rows.begin; r < rows.end; ++r) {
      for (i64 c = cols.begin; c < cols.end; ++c) {
        const i64 k = pool_in_offset(g, {out.n, r, c, out.d});
        if (best < 0 || x[k] > x[best]) best = k;
      }
    }
    return best;
  }
  double avg(i64 o) const {
    const PoolPos out = pool_unravel(g.nchw, g.out_rows, g.out_cols, g.depth, o);
    const PoolRange rows = pool_window(out.row, g.stride_rows, g.pad_top, g.window_rows, g.rows);
    const PoolRange cols = pool_window(out.col, g.stride_cols, g.pad_left, g.window_cols, g.cols);
    double sum = 0;
    for (i64 r = rows.begin; r < rows.end; ++r) {
      for (i64 c = cols.begin; c < cols.end; ++c) sum += x[pool_in_offset(g, {out.n, r, c, out.d})];
    }
    return sum / static_cast<double>((rows.end - rows.begin) * (cols.end - cols.begin));
  }
  // Gather form of the gradients: input i sums over the windows that cover it.
  double grad_at(i64 i, const double* grad, const std::vector<i64>& argmaxes, bool max) const {
    const PoolPos in = pool_unravel(g.nchw, g.rows, g.cols, g.depth, i);
    const PoolRange rows = pool_covering(in.row, g.stride_rows, g.pad_top, g.window_rows, g.out_rows);
    const PoolRange cols = pool_covering(in.col, g.stride_cols, g.pad_left, g.window_cols, g.out_cols);
    double acc = 0;
    for (i64 r = rows.begin; r < rows.end; ++r) {
      const PoolRange wr = pool_window(r, g.stride_rows, g.pad_top, g.window_rows, g.rows);
      for (i64 c = cols.begin; c < cols.end; ++c) {
        const PoolRange wc = pool_window(c, g.stride_cols, g.pad_left, g.window_cols, g.cols);
        const i64 o = pool_out_offset(g, {in.n, r, c, in.d});
        if (max && argmaxes[static_cast<std::size_t>(o)] == i) acc += grad[o];
        if (!max) acc += grad[o] / static_cast<double>((wr.end - wr.begin) * (wc.end - wc.begin));
      }
    }
    return acc;
  }
};

}  // namespace

TEST_CASE("cuda pooling loops emulated on the host equal the reference kernels exactly", "[cuda-host]") {
  std::mt19937 rng(23);
  auto pick = [&](i64 lo, i64 hi) { return std::uniform_int_distribution<i64>(lo, hi)(rng); };
  std::uniform_real_distribution<double> real(-2.0, 2.0);
  int explicit_checked = 0;
  for (int trial = 0; trial < 90; ++trial) {
    const auto drawn = testing::random_pool_case(rng, 2, 9, 3);
    if (!drawn) continue;
    const AttrMap& attrs = drawn->attrs;
    const Shape in_shape = drawn->input;
    const bool explicit_padding = drawn->explicit_padding;
    Tensor x = Tensor::empty(DType::Float64, in_shape);
    // Few distinct values, so windows often hold ties (the first maximum must win).
    for (i64 i = 0; i < x.num_elements(); ++i)
      x.data<double>()[i] = static_cast<double>(pick(-3, 3)) + real(rng) * (pick(0, 1) ? 1e-3 : 0.0);
    const Tensor pooled = run_op("MaxPool", {x}, attrs, {.backend = "reference"})[0];
    Tensor grad = Tensor::empty(DType::Float64, pooled.shape());
    for (i64 i = 0; i < grad.num_elements(); ++i) grad.data<double>()[i] = real(rng);

    PoolEmulation e;
    const ops::Pool2DGeometry geo = ops::pool2d_geometry("MaxPool", attrs, in_shape);  // as pooling_kernels.cpp
    e.g.nchw = geo.nchw, e.g.batch = geo.batch, e.g.depth = geo.depth, e.g.rows = geo.rows, e.g.cols = geo.cols;
    e.g.window_rows = geo.window_rows, e.g.window_cols = geo.window_cols;
    e.g.stride_rows = geo.stride_rows, e.g.stride_cols = geo.stride_cols;
    e.g.out_rows = geo.out_rows, e.g.out_cols = geo.out_cols, e.g.pad_top = geo.pad_top, e.g.pad_left = geo.pad_left;
    e.x = x.data<double>();
    REQUIRE(pool_out_count(e.g) == pooled.num_elements());
    REQUIRE(pool_in_count(e.g) == x.num_elements());

    const Tensor max_grad = run_op("MaxPoolGrad", {x, pooled, grad}, attrs, {.backend = "reference"})[0];
    // AvgPool has no EXPLICIT padding: its checks run for SAME and VALID only.
    Tensor avg, avg_grad;
    if (!explicit_padding) {
      std::vector<std::int32_t> dims(in_shape.dims().begin(), in_shape.dims().end());
      const Tensor shape = Tensor::from_values<std::int32_t>(Shape{4}, dims);
      avg = run_op("AvgPool", {x}, attrs, {.backend = "reference"})[0];
      avg_grad = run_op("AvgPoolGrad", {shape, grad}, attrs, {.backend = "reference"})[0];
    }
    Tensor grad_in = Tensor::empty(DType::Float64, in_shape);
    for (i64 i = 0; i < grad_in.num_elements(); ++i) grad_in.data<double>()[i] = real(rng);
    const Tensor grad_grad = run_op("MaxPoolGradGrad", {x, pooled, grad_in}, attrs, {.backend = "reference"})[0];

    INFO("trial " << trial << " " << drawn->describe());
    std::vector<i64> argmaxes(static_cast<std::size_t>(pooled.num_elements()));
    for (i64 o = 0; o < pooled.num_elements(); ++o) {
      argmaxes[static_cast<std::size_t>(o)] = e.argmax(o);
      REQUIRE(argmaxes[static_cast<std::size_t>(o)] >= 0);
      REQUIRE(e.x[argmaxes[static_cast<std::size_t>(o)]] == pooled.data<double>()[o]);
      REQUIRE(grad_in.data<double>()[argmaxes[static_cast<std::size_t>(o)]] == grad_grad.data<double>()[o]);
      if (!explicit_padding) REQUIRE(e.avg(o) == avg.data<double>()[o]);
    }
    for (i64 i = 0; i < x.num_elements(); ++i) {
      REQUIRE(e.grad_at(i, grad.data<double>(), argmaxes, true) == max_grad.data<double>()[i]);
      if (!explicit_padding) REQUIRE(e.grad_at(i, grad.data<double>(), argmaxes, false) == avg_grad.data<double>()[i]);
    }
    explicit_checked += explicit_padding;
  }
  CHECK(explicit_checked > 10);
}
