// The CUDA implicit-GEMM conv kernels' loop nests, emulated on the host with the very index
// functions the kernels call (conv_index.hpp): every block, slab load, micro-tile, split-K range
// and the combine pass. Integer-valued data makes every sum exact, so the result must equal the
// reference conv kernel bit for bit; every offset is checked in range and every output written once.
#include <catch2/catch.hpp>

#include <array>
#include <random>
#include <vector>

#include "dagrad/backends/cuda/conv2d_kernels.hpp"
#include "dagrad/core/eager.hpp"
#include "dagrad/core/tensor.hpp"
#include "dagrad/ops/conv2d.hpp"
#include "dagrad/ops/conv_geometry.hpp"

namespace {

using namespace dagrad;
using namespace dagrad::cuda;
using i64 = std::int64_t;

struct Case {
  ops::Conv2DOptions options;
  Shape input, filter;
  ops::Conv2DGeometry geometry;
};

Case random_case(std::mt19937& rng) {
  auto pick = [&](i64 lo, i64 hi) { return std::uniform_int_distribution<i64>(lo, hi)(rng); };
  for (;;) {
    Case c;
    const bool nchw = pick(0, 1) == 1;
    c.options.data_format = nchw ? "NCHW" : "NHWC";
    c.options.padding = std::array<const char*, 3>{"SAME", "VALID", "EXPLICIT"}[pick(0, 2)];
    const i64 sr = pick(1, 3), sc = pick(1, 3), dr = pick(1, 2), dc = pick(1, 2);
    c.options.strides = nchw ? std::vector<i64>{1, 1, sr, sc} : std::vector<i64>{1, sr, sc, 1};
    c.options.dilations = nchw ? std::vector<i64>{1, 1, dr, dc} : std::vector<i64>{1, dr, dc, 1};
    if (c.options.padding == "EXPLICIT") {
      const i64 t = pick(0, 2), b = pick(0, 2), l = pick(0, 2), r = pick(0, 2);
      c.options.explicit_paddings = nchw ? std::vector<i64>{0, 0, 0, 0, t, b, l, r} : std::vector<i64>{0, 0, t, b, l, r, 0, 0};
    }
    const i64 groups = pick(1, 3), cg = pick(1, 20), kg = pick(1, 70);
    const i64 n = pick(1, 3), h = pick(1, 10), w = pick(1, 10), kh = pick(1, 3), kw = pick(1, 3);
    c.input = nchw ? Shape{n, groups * cg, h, w} : Shape{n, h, w, groups * cg};
    c.filter = Shape{kh, kw, cg, groups * kg};
    try {
      const auto attrs = ops::parse_conv2d_attrs("Conv2D", ops::conv2d_attr_map(c.options));
      c.geometry = ops::conv2d_geometry("Conv2D", attrs, c.input, c.filter);
      return c;
    } catch (const Error&) {
      continue;  // e.g. VALID with a window larger than the input
    }
  }
}

Tensor random_integers(const Shape& shape, std::mt19937& rng) {
  Tensor t = Tensor::empty(DType::Float64, shape);
  std::uniform_int_distribution<int> dist(-4, 4);
  for (i64 i = 0; i < t.num_elements(); ++i) t.data<double>()[i] = dist(rng);
  return t;
}

// Runs the kernel's loop nest for `tile` and `splits` on the host, with double arithmetic.
// Catch's REQUIRE is too slow for inner loops: violations are counted in `bad` and checked once.
std::vector<double> emulate(const ConvGemm& p, TileShape tile, int splits, const Tensor& a, const Tensor& b,
                            i64 c_size, int& bad) {
  const double* av = a.data<double>();
  const double* bv = b.data<double>();
  std::vector<double> c(static_cast<std::size_t>(c_size), 0.0);
  std::vector<int> written(static_cast<std::size_t>(c_size), 0);
  std::vector<double> work(static_cast<std::size_t>(splits * p.groups * p.m * p.n), 0.0);
  const i64 m_tiles = (p.m + tile.bm - 1) / tile.bm, n_tiles = (p.n + tile.bn - 1) / tile.bn;
  std::vector<double> as(static_cast<std::size_t>(tile.bm * tile.bk)), bs(static_cast<std::size_t>(tile.bk * tile.bn));
  std::vector<int> loads_a(as.size()), loads_b(bs.size());
  i64 k_covered = 0;
  for (i64 z = 0; z < p.groups * splits; ++z) {
    const i64 group = z / splits;
    const int split = static_cast<int>(z % splits);
    i64 k_begin, k_end;
    split_range(p.k, tile.bk, splits, split, &k_begin, &k_end);
    if (group == 0) k_covered += k_end - k_begin;
    bad += !(k_begin % tile.bk == 0 || k_begin == k_end);  // non-empty ranges start on a slab
    for (i64 bx = 0; bx < m_tiles; ++bx) {
      for (i64 by = 0; by < n_tiles; ++by) {
        const i64 m0 = bx * tile.bm, n0 = by * tile.bn;
        std::vector<double> acc(static_cast<std::size_t>(tile.bm * tile.bn), 0.0);
        for (i64 k0 = k_begin; k0 < k_end; k0 += tile.bk) {
          std::fill(loads_a.begin(), loads_a.end(), 0);
          std::fill(loads_b.begin(), loads_b.end(), 0);
          for (int tid = 0; tid < tile.threads; ++tid) {
            for (int e = tid; e < tile.bm * tile.bk; e += tile.threads) {
              int r, col;
              slab_coords(e, tile.bk, &r, &col);
              const i64 gm = m0 + r, gk = k0 + col;
              const i64 off = gm < p.m && gk < k_end ? a_offset(p, group, gm, gk) : -1;
              bad += !(off < a.num_elements());
              as[static_cast<std::size_t>(r * tile.bk + col)] = off >= 0 ? av[off] : 0.0;
              ++loads_a[static_cast<std::size_t>(r * tile.bk + col)];
            }
            for (int e = tid; e < tile.bk * tile.bn; e += tile.threads) {
              int r, col;
              slab_coords(e, tile.bn, &r, &col);
              const i64 gk = k0 + r, gn = n0 + col;
              const i64 off = gk < k_end && gn < p.n ? b_offset(p, group, gk, gn) : -1;
              bad += !(off < b.num_elements());
              if (gk < k_end && gn < p.n) bad += !(off >= 0);  // B is never padding
              bs[static_cast<std::size_t>(r * tile.bn + col)] = off >= 0 ? bv[off] : 0.0;
              ++loads_b[static_cast<std::size_t>(r * tile.bn + col)];
            }
          }
          for (int l : loads_a) bad += l != 1;
          for (int l : loads_b) bad += l != 1;
          for (i64 r = 0; r < tile.bm && m0 + r < p.m; ++r) {
            for (i64 col = 0; col < tile.bn && n0 + col < p.n; ++col) {
              for (int kk = 0; kk < tile.bk; ++kk) {
                acc[static_cast<std::size_t>(r * tile.bn + col)] +=
                    as[static_cast<std::size_t>(r * tile.bk + kk)] * bs[static_cast<std::size_t>(kk * tile.bn + col)];
              }
            }
          }
        }
        // The SIMT kernel's threads own the tile through simt_row/simt_col: each element exactly once.
        std::vector<int> owner(static_cast<std::size_t>(tile.bm * tile.bn), 0);
        if (tile.threads == kSimtTile.threads) {
          for (int tid = 0; tid < tile.threads; ++tid) {
            for (int i = 0; i < kSimtMicro; ++i) {
              for (int j = 0; j < kSimtMicro; ++j) ++owner[static_cast<std::size_t>(simt_row(tid, i) * tile.bn + simt_col(tid, j))];
            }
          }
          for (int o : owner) bad += !(o == 1);
        }
        for (i64 r = 0; r < tile.bm && m0 + r < p.m; ++r) {
          for (i64 col = 0; col < tile.bn && n0 + col < p.n; ++col) {
            const double v = acc[static_cast<std::size_t>(r * tile.bn + col)];
            if (splits == 1) {
              const i64 off = c_offset(p, group, m0 + r, n0 + col);
              bad += !(off >= 0);
              bad += !(off < c_size);
              c[static_cast<std::size_t>(off)] = v;
              ++written[static_cast<std::size_t>(off)];
            } else {
              work[static_cast<std::size_t>(((split * p.groups + group) * p.m + m0 + r) * p.n + n0 + col)] = v;
            }
          }
        }
      }
    }
  }
  bad += !(k_covered == p.k);  // the split ranges tile k exactly
  if (splits > 1) {  // conv_combine_kernel
    const i64 total = p.groups * p.m * p.n;
    for (i64 i = 0; i < total; ++i) {
      const i64 group = i / (p.m * p.n), row = (i % (p.m * p.n)) / p.n, col = i % p.n;
      double sum = 0;
      for (int s = 0; s < splits; ++s) sum += work[static_cast<std::size_t>(s * total + i)];
      const i64 off = c_offset(p, group, row, col);
      bad += !(off >= 0);
      bad += !(off < c_size);
      c[static_cast<std::size_t>(off)] = sum;
      ++written[static_cast<std::size_t>(off)];
    }
  }
  for (int w : written) bad += !(w == 1);
  return c;
}

}  // namespace

TEST_CASE("cuda conv tiling emulated on the host equals the reference kernels", "[cuda-host][conv]") {
  std::mt19937 rng(2024);
  const EagerOptions reference{.backend = "reference"};
  int cases = 0, split_cases = 0;
  for (int trial = 0; trial < 40; ++trial) {
    const Case c = random_case(rng);
    const auto& g = c.geometry;
    const Shape out_shape(g.output_dims());
    const Tensor x = random_integers(c.input, rng);
    const Tensor f = random_integers(c.filter, rng);
    const Tensor dy = random_integers(out_shape, rng);
    const AttrMap attrs = ops::conv2d_attr_map(c.options);
    const Tensor y_ref = run_op("Conv2D", {x, f}, attrs, reference)[0];
    const Tensor dx_ref = run_op("Conv2DBackpropInputV2", {x, f, dy}, attrs, reference)[0];
    const Tensor df_ref = run_op("Conv2DBackpropFilterV2", {x, f, dy}, attrs, reference)[0];
    struct Op {
      ConvKind kind;
      const Tensor *a, *b, *expected;
    };
    for (const Op& op : {Op{ConvKind::Forward, &x, &f, &y_ref}, Op{ConvKind::BackpropInput, &dy, &f, &dx_ref},
                         Op{ConvKind::BackpropFilter, &x, &dy, &df_ref}}) {
      const ConvGemm p = make_conv_gemm(op.kind, g);
      if (p.m == 0 || p.n == 0 || p.k == 0) continue;
      for (TileShape tile : {kSimtTile, kTensorTile}) {
        const i64 tiles = ((p.m + tile.bm - 1) / tile.bm) * ((p.n + tile.bn - 1) / tile.bn) * p.groups;
        // The split count a 132-SM GPU would choose, and a forced odd split.
        for (int splits : {choose_splits(tiles, p.k, tile.bk, 132), 3}) {
          INFO("kind " << static_cast<int>(op.kind) << " m " << p.m << " n " << p.n << " k " << p.k << " groups "
                       << p.groups << " splits " << splits << " tile bk " << tile.bk);
          int bad = 0;
          const auto got = emulate(p, tile, splits, *op.a, *op.b, op.expected->num_elements(), bad);
          REQUIRE(bad == 0);
          i64 mismatches = 0;
          for (i64 i = 0; i < op.expected->num_elements(); ++i) {
            mismatches += got[static_cast<std::size_t>(i)] != op.expected->data<double>()[i];
          }
          REQUIRE(mismatches == 0);
          ++cases;
          split_cases += splits > 1;
        }
      }
    }
  }
  CHECK(cases > 200);
  CHECK(split_cases > 100);
}

TEST_CASE("cuda conv split-K choice fills the GPU and keeps whole slabs", "[cuda-host][conv]") {
  // Backprop-filter shapes: few C tiles, very long k.
  CHECK(choose_splits(4, 16 * 56 * 56, 16, 132) == 64);
  CHECK(choose_splits(1000, 1 << 20, 16, 132) == 1);   // enough tiles already
  CHECK(choose_splits(1, 64, 16, 132) == 1);           // too shallow to split
  for (int splits = 1; splits <= 7; ++splits) {
    i64 covered = 0, previous_end = 0;
    for (int s = 0; s < splits; ++s) {
      i64 b, e;
      split_range(1000, 16, splits, s, &b, &e);
      CHECK(b == previous_end);
      CHECK(b % 16 == 0);
      covered += e - b;
      previous_end = e;
    }
    CHECK(covered == 1000);
  }
}
