// The Winograd conv path: its matrices compute the correlation they stand for on 6 and 8 points,
// its tile transforms (every size the micro-kernel takes; the hand-written BT, 8 x 8 AT and dy
// transform) match a float64 product, its three kernels match the reference on filters of 3 to 5
// taps a side (square or not), on both tile sides, every padding mode (pads beyond the filter, odd
// sizes, channel tails), dilations 1 to 4, the same bits at 1 and 2 threads, its finite rule on
// overflowing inputs, and its gradients by finite differences.
#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <tbb/task_arena.h>

#include <dagrad/autodiff/gradient_checker.hpp>
#include <dagrad/dagrad.hpp>

#include "dagrad/backends/cpu/conv2d/kernels.hpp"
#include "dagrad/backends/cpu/conv2d/paths.hpp"
#include "dagrad/backends/cpu/conv2d/winograd_matrices.hpp"
#include "dagrad/backends/cpu/microkernels.hpp"
#include "ops/conv_test_util.hpp"
#include "support/error_of.hpp"
#include "support/scoped_env.hpp"

namespace {

using namespace dagrad;
using i64 = std::int64_t;

std::vector<double> random_values(std::size_t n, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> v(n);
  for (double& x : v) x = u(rng);
  return v;
}

// y = AT [(G g) * (BT d)] in float64.
std::vector<double> winograd_1d(const cpu::WinogradMatrices& w, const std::vector<double>& d,
                                const std::vector<double>& g) {
  const int n = w.n;
  std::vector<double> product(static_cast<std::size_t>(n)), y(static_cast<std::size_t>(w.m));
  for (int j = 0; j < n; ++j) {
    double gj = 0, dj = 0;
    for (int k = 0; k < w.r; ++k) gj += w.filter[j * w.r + k] * g[k];
    for (int i = 0; i < n; ++i) dj += w.input[j * n + i] * d[i];
    product[j] = gj * dj;
  }
  for (int i = 0; i < w.m; ++i)
    for (int j = 0; j < n; ++j) y[i] += w.output[i * n + j] * product[j];
  return y;
}

struct Conv {
  i64 n, h, w, c, k, kh, kw;
  std::string padding;
  std::vector<i64> pads;  // EXPLICIT: top, bottom, left, right
  i64 dilation = 1;
};

AttrMap attrs_of(const Conv& cs) {
  ops::Conv2DOptions options{
      .strides = {1, 1, 1, 1}, .padding = cs.padding, .dilations = {1, cs.dilation, cs.dilation, 1}};
  if (!cs.pads.empty()) options.explicit_paddings = {0, 0, cs.pads[0], cs.pads[1], cs.pads[2], cs.pads[3], 0, 0};
  return ops::conv2d_attr_map(options);
}

ops::Conv2DGeometry geometry_of(const Conv& cs) {
  return ops::conv2d_geometry("Conv2D", ops::parse_conv2d_attrs("Conv2D", attrs_of(cs)), Shape{cs.n, cs.h, cs.w, cs.c},
                              Shape{cs.kh, cs.kw, cs.c, cs.k});
}

std::string describe(const Conv& cs) {
  std::string pads;
  for (const i64 p : cs.pads) pads += " " + std::to_string(p);
  return str_cat("N", cs.n, " ", cs.h, "x", cs.w, " C", cs.c, " K", cs.k, " filter ", cs.kh, "x", cs.kw, " ",
                 cs.padding, pads, " dilation ", cs.dilation);
}

// Every filter size the path takes, each padding mode, pads beyond the filter (the input
// gradient's offsets turn negative), sizes that are no multiple of the tiles, channel tails,
// reductions of 16 to 130.
const Conv kConvs[] = {
    {8, 14, 14, 32, 64, 5, 5, "SAME", {}},  // train_cnn's second layer
    {1, 9, 11, 17, 20, 3, 3, "SAME", {}},
    {2, 7, 10, 16, 33, 4, 4, "VALID", {}},
    {1, 8, 9, 20, 18, 5, 3, "EXPLICIT", {3, 1, 0, 4}},
    {3, 6, 5, 24, 16, 3, 5, "EXPLICIT", {6, 5, 2, 0}},
    {1, 13, 7, 130, 17, 4, 5, "SAME", {}},
    {1, 5, 5, 16, 16, 5, 5, "VALID", {}},
    // Dilations: d x d phases, each its own grid of tiles (odd sizes give phases of unequal
    // length; at 4 with VALID one phase alone has outputs).
    {2, 11, 12, 16, 20, 3, 3, "SAME", {}, 2},
    {1, 13, 10, 17, 24, 5, 4, "EXPLICIT", {3, 1, 0, 4}, 3},
    {1, 9, 10, 16, 16, 3, 3, "VALID", {}, 4},
};

const char* const kOps[] = {"Conv2D", "Conv2DBackpropInputV2", "Conv2DBackpropFilterV2"};

std::vector<Tensor> op_inputs(const std::string& op, const Conv& cs, DType dtype, std::mt19937_64& rng) {
  const ops::Conv2DGeometry g = geometry_of(cs);
  const Tensor x = conv_test::random_tensor(dtype, Shape{cs.n, cs.h, cs.w, cs.c}, rng);
  const Tensor f = conv_test::random_tensor(dtype, Shape{cs.kh, cs.kw, cs.c, cs.k}, rng);
  if (op == "Conv2D") return {x, f};
  return {x, f, conv_test::random_tensor(dtype, Shape{cs.n, g.out_rows, g.out_cols, cs.k}, rng)};
}

// The largest difference from `want` relative to its largest magnitude.
double relative_error(const Tensor& got, const Tensor& want) {
  REQUIRE(got.shape() == want.shape());
  double worst = 0, scale = 1e-30;
  for (i64 i = 0; i < want.num_elements(); ++i) {
    scale = std::max(scale, std::abs(want.value_as_double(i)));
    worst = std::max(worst, std::abs(got.value_as_double(i) - want.value_as_double(i)));
  }
  return worst / scale;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

// A tile transform out[i][j] = sum_a sum_b L[i][a] x[a][b] R[j][b] (L: ni x na, R: nj x nb,
// row-major; x: na x nb pointers, null ones read zeros; out: ni x nj values `lanes` apart) against
// float64: the largest difference relative to the sum of the terms' magnitudes.
double transform_error(const std::vector<double>& l, const std::vector<double>& r, int ni, int nj, int na, int nb,
                       const std::vector<const float*>& x, const std::vector<float>& out, i64 lanes) {
  double worst = 0;
  for (int i = 0; i < ni; ++i)
    for (int j = 0; j < nj; ++j)
      for (i64 c = 0; c < lanes; ++c) {
        double want = 0, magnitude = 1e-30;
        for (int a = 0; a < na; ++a)
          for (int b = 0; b < nb; ++b)
            if (x[a * nb + b]) {
              const double term = l[i * na + a] * x[a * nb + b][c] * r[j * nb + b];
              want += term;
              magnitude += std::abs(term);
            }
        worst = std::max(worst, std::abs(out[(i * nj + j) * lanes + c] - want) / magnitude);
      }
  return worst;
}

// The first rows x cols entries of a winograd_matrices array, transposed where asked.
std::vector<double> matrix(const std::array<double, 64>& m, int rows, int cols, bool transpose = false) {
  std::vector<double> v(static_cast<std::size_t>(rows * cols));
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j) v[transpose ? j * rows + i : i * cols + j] = m[i * cols + j];
  return v;
}

}  // namespace

TEST_CASE("winograd matrices compute the correlation of every F(m, r) with m + r - 1 = 6 or 8",
          "[cpu][conv][winograd]") {
  std::mt19937_64 rng(1);
  for (const int n : {6, 8})
    for (int r = 1; r <= n; ++r) {
      const int m = n + 1 - r;
      const cpu::WinogradMatrices w = cpu::winograd_matrices(m, r);
      CHECK(w.m == m);
      CHECK(w.r == r);
      CHECK(w.n == n);
      for (int trial = 0; trial < 20; ++trial) {
        const std::vector<double> d = random_values(static_cast<std::size_t>(n), rng),
                                  g = random_values(static_cast<std::size_t>(r), rng);
        const std::vector<double> y = winograd_1d(w, d, g);
        for (int i = 0; i < m; ++i) {
          double direct = 0;
          for (int k = 0; k < r; ++k) direct += d[i + k] * g[k];
          INFO("F(" << m << ", " << r << ") output " << i);
          CHECK(y[i] == Approx(direct).margin(1e-12));
        }
      }
      // BT holds halves on 6 points and quarters on 8 (exact in binary; the other fractions are
      // in G), the same for every F(m, r) of a tile side.
      for (const double b : w.input) CHECK(4 * b == std::round(4 * b));
      if (n == 6)
        for (const double b : w.input) CHECK(2 * b == std::round(2 * b));
      CHECK(w.input == cpu::winograd_matrices(n, 1).input);
    }
  CHECK_THAT(testing::error_of([] { cpu::winograd_matrices(2, 4); }), Catch::Matchers::Contains("F(2, 4)"));
  CHECK_THAT(testing::error_of([] { cpu::winograd_matrices(3, 5); }), Catch::Matchers::Contains("= 6 or 8"));
  CHECK_THAT(testing::error_of([] { cpu::winograd_matrices(0, 7); }), Catch::Matchers::Contains("m, r >= 1"));
}

TEST_CASE("the tile transform micro-kernel matches a float64 product for every size it takes",
          "[cpu][conv][winograd]") {
  const cpu::MicroKernels& mk = cpu::micro_kernels();
  std::mt19937_64 rng(2);
  const i64 lanes = 2 * mk.vector_width + 3;  // whole vectors and a tail
  int sizes = 0;
  for (int ni = 1; ni <= 8; ++ni)
    for (int nj = 1; nj <= 8; ++nj)
      for (int na = 1; na <= 8; ++na)
        for (int nb = 1; nb <= 8; ++nb) {
          if (!cpu::transform_supported(ni, nj, na, nb)) continue;
          ++sizes;
          std::vector<float> l(static_cast<std::size_t>(ni * na)), r(static_cast<std::size_t>(nj * nb));
          for (float& v : l) v = static_cast<float>(random_values(1, rng)[0]);
          for (float& v : r) v = static_cast<float>(random_values(1, rng)[0]);
          std::vector<float> in(static_cast<std::size_t>(na * nb * lanes)),
              out(static_cast<std::size_t>(ni * nj * lanes));
          for (float& v : in) v = static_cast<float>(random_values(1, rng)[0]);
          std::vector<const float*> pin(static_cast<std::size_t>(na * nb));
          std::vector<float*> pout(static_cast<std::size_t>(ni * nj));
          for (int e = 0; e < na * nb; ++e) pin[e] = e == 1 ? nullptr : in.data() + e * lanes;  // one reads zeros
          for (int e = 0; e < ni * nj; ++e) pout[e] = out.data() + e * lanes;
          mk.transform(ni, nj, na, nb, l.data(), r.data(), pin.data(), pout.data(), lanes);
          double worst = 0;
          for (int i = 0; i < ni; ++i)
            for (int j = 0; j < nj; ++j)
              for (i64 c = 0; c < lanes; ++c) {
                double want = 0;
                for (int a = 0; a < na; ++a)
                  for (int b = 0; b < nb; ++b)
                    if (pin[a * nb + b]) want += double{l[i * na + a]} * pin[a * nb + b][c] * double{r[j * nb + b]};
                worst = std::max(worst, std::abs(out[(i * nj + j) * lanes + c] - want));
              }
          INFO(ni << "x" << nj << " from " << na << "x" << nb);
          CHECK(worst < 1e-5);
        }
  // To 6 x 6 and 8 x 8 from 3 to 5 a side; from 6 x 6 to 2 to 5.
  CHECK(sizes == 2 * 9 + 16);
  CHECK(!cpu::transform_supported(4, 4, 8, 8));
  CHECK(!cpu::transform_supported(6, 6, 6, 6));
  CHECK(!cpu::transform_supported(5, 5, 5, 5));
}

TEST_CASE("the hand-written BT transforms match a float64 product with the generated BT", "[cpu][conv][winograd]") {
  const cpu::MicroKernels& mk = cpu::micro_kernels();
  std::mt19937_64 rng(3);
  const i64 lanes = 3 * mk.vector_width + 1;
  for (const int n : {6, 8}) {
    const cpu::WinogradMatrices w = cpu::winograd_matrices(n, 1);
    std::vector<float> in(static_cast<std::size_t>(n * n * lanes)), got(in.size());
    for (float& v : in) v = static_cast<float>(random_values(1, rng)[0]);
    std::vector<const float*> pin(static_cast<std::size_t>(n * n));
    std::vector<float*> pout(static_cast<std::size_t>(n * n));
    for (int e = 0; e < n * n; ++e) {
      pin[e] = e % 7 == 3 ? nullptr : in.data() + e * lanes;  // zeros where a tile leaves the image
      pout[e] = got.data() + e * lanes;
    }
    mk.winograd_input(n, pin.data(), pout.data(), lanes);
    const std::vector<double> bt = matrix(w.input, n, n);
    const double worst = transform_error(bt, bt, n, n, n, n, pin, got, lanes);  // float32 sums of up to 36 terms
    INFO(n << " x " << n);
    CHECK(worst < 1e-6);
  }
}

TEST_CASE("the hand-written 8 x 8 back transforms match a float64 product, and any Inf reaches every output",
          "[cpu][conv][winograd]") {
  const cpu::MicroKernels& mk = cpu::micro_kernels();
  std::mt19937_64 rng(9);
  const i64 lanes = 2 * mk.vector_width + 1;
  for (int mi = 4; mi <= 6; ++mi)
    for (int mj = 4; mj <= 6; ++mj) {
      const cpu::WinogradMatrices wr = cpu::winograd_matrices(mi, 9 - mi), wc = cpu::winograd_matrices(mj, 9 - mj);
      std::vector<float> in(static_cast<std::size_t>(64 * lanes)), got(static_cast<std::size_t>(mi * mj * lanes));
      for (float& v : in) v = static_cast<float>(random_values(1, rng)[0]);
      std::vector<const float*> pin(64);
      std::vector<float*> pout(static_cast<std::size_t>(mi * mj));
      for (int e = 0; e < 64; ++e) pin[e] = in.data() + e * lanes;
      for (int e = 0; e < mi * mj; ++e) pout[e] = got.data() + e * lanes;
      mk.winograd_output(mi, mj, pin.data(), pout.data(), lanes);
      const double worst =
          transform_error(matrix(wr.output, mi, 8), matrix(wc.output, mj, 8), mi, mj, 8, 8, pin, got, lanes);
      INFO(mi << " x " << mj);
      CHECK(worst < 1e-6);
      // The winograd path's finite rule: a non-finite product anywhere makes the whole tile non-finite.
      for (int e = 0; e < 64; ++e) {
        const float kept = in[e * lanes];
        in[e * lanes] = std::numeric_limits<float>::infinity();
        mk.winograd_output(mi, mj, pin.data(), pout.data(), lanes);
        bool all = true;
        for (int o = 0; o < mi * mj; ++o) all = all && !std::isfinite(got[o * lanes]);
        INFO("Inf at " << e);
        CHECK(all);
        in[e * lanes] = kept;
      }
    }
}

TEST_CASE("the hand-written dy transform of the filter gradient matches a float64 product", "[cpu][conv][winograd]") {
  const cpu::MicroKernels& mk = cpu::micro_kernels();
  std::mt19937_64 rng(10);
  const i64 lanes = 2 * mk.vector_width + 3;
  for (int mi = 2; mi <= 4; ++mi)
    for (int mj = 2; mj <= 4; ++mj) {
      const cpu::WinogradMatrices wr = cpu::winograd_matrices(mi, 7 - mi), wc = cpu::winograd_matrices(mj, 7 - mj);
      std::vector<float> in(static_cast<std::size_t>(mi * mj * lanes)), got(static_cast<std::size_t>(36 * lanes));
      for (float& v : in) v = static_cast<float>(random_values(1, rng)[0]);
      std::vector<const float*> pin(static_cast<std::size_t>(mi * mj));
      std::vector<float*> pout(36);
      for (int e = 0; e < mi * mj; ++e) pin[e] = e == 1 ? nullptr : in.data() + e * lanes;  // one reads zeros
      for (int e = 0; e < 36; ++e) pout[e] = got.data() + e * lanes;
      mk.winograd_dy(mi, mj, pin.data(), pout.data(), lanes);
      // L = AT^T of the rows' F(mi, 7 - mi), R = AT^T of the columns'.
      const double worst = transform_error(matrix(wr.output, mi, 6, true), matrix(wc.output, mj, 6, true), 6, 6, mi, mj,
                                           pin, got, lanes);
      INFO(mi << " x " << mj);
      CHECK(worst < 1e-6);
    }
}

TEST_CASE("conv2d and the input gradient take 8 x 8 tiles where they save a quarter of the products",
          "[cpu][conv][winograd]") {
  const auto tile = [](const Conv& cs, bool input) { return cpu::conv2d_winograd_tile(geometry_of(cs), input); };
  CHECK(tile({8, 14, 14, 32, 64, 5, 5, "SAME", {}}, false) == 8);  // 16 tiles of 64 against 49 of 36
  CHECK(tile({8, 14, 14, 32, 64, 5, 5, "SAME", {}}, true) == 8);
  CHECK(tile({8, 56, 56, 32, 64, 4, 4, "SAME", {}}, false) == 8);  // 144 x 64 against 361 x 36
  CHECK(tile({8, 56, 56, 32, 64, 3, 3, "SAME", {}}, false) == 6);  // 3 taps: F(6, 3) errs more
  CHECK(tile({8, 56, 56, 32, 64, 5, 3, "SAME", {}}, false) == 6);
  CHECK(tile({1, 14, 14, 65, 64, 5, 5, "SAME", {}}, false) == 6);  // sums over more than 64 channels
  CHECK(tile({1, 14, 14, 65, 64, 5, 5, "SAME", {}}, true) == 8);   // (the input gradient's are the 64 filters)
  CHECK(tile({1, 14, 14, 64, 65, 5, 5, "SAME", {}}, true) == 6);
  CHECK(tile({1, 5, 5, 16, 16, 5, 5, "VALID", {}}, false) == 6);  // one output: one tile either way
  CHECK(tile({1, 5, 5, 16, 16, 5, 5, "VALID", {}}, true) == 6);   // 5 x 5 outputs: 4 tiles of 64, 9 of 36
  // The case table below runs both sides in both ops.
  std::set<std::pair<int, bool>> seen;
  for (const Conv& cs : kConvs)
    for (const bool input : {false, true}) seen.insert({tile(cs, input), input});
  CHECK(seen.size() == 4);
}

TEST_CASE("the winograd path matches the reference in every dtype it claims", "[cpu][conv][winograd]") {
  std::mt19937_64 rng(4);
  for (const Conv& cs : kConvs) {
    REQUIRE(cpu::conv2d_winograd_applies(geometry_of(cs)));
    for (const char* op : kOps)
      for (const DType dtype : {DType::Float32, DType::Half, DType::BFloat16}) {
        const std::vector<Tensor> in = op_inputs(op, cs, dtype, rng);
        std::vector<Tensor> in64;
        for (const Tensor& t : in) in64.push_back(t.cast(DType::Float64));
        const Tensor want = run_op(op, in64, attrs_of(cs), {.backend = "reference"}).at(0);
        const Tensor got = run_op(op, in, attrs_of(cs), {.kernel_path = "winograd"}).at(0);
        INFO(op << " " << dtype_name(dtype) << " " << describe(cs));
        // float32: the reference tolerance of every conv path; half and bfloat16: their rounding.
        CHECK(relative_error(got, want) <= (dtype == DType::Float32 ? 1e-5 : dtype == DType::Half ? 1e-3 : 8e-3));
      }
  }
}

TEST_CASE("the winograd kernels give the same bits at 1 and 2 threads", "[cpu][conv][winograd]") {
  std::mt19937_64 rng(5);
  const Conv cs{4, 14, 14, 32, 64, 5, 5, "SAME", {}};
  for (const char* op : kOps) {
    const std::vector<Tensor> in = op_inputs(op, cs, DType::Float32, rng);
    Tensor one, two;
    tbb::task_arena(1).execute([&] { one = run_op(op, in, attrs_of(cs), {.kernel_path = "winograd"}).at(0); });
    tbb::task_arena(2).execute([&] { two = run_op(op, in, attrs_of(cs), {.kernel_path = "winograd"}).at(0); });
    INFO(op);
    CHECK(same_bits(one, two));
  }
}

TEST_CASE("winograd results that overflow where the direct sums do not are computed again", "[cpu][conv][winograd]") {
  // BT's rows add up to 7 in magnitude, 49 in two dimensions: inputs of 3e37 overflow in the
  // input transform though every direct product and sum stays finite.
  std::mt19937_64 rng(6);
  const Conv cs{1, 8, 8, 16, 16, 3, 3, "SAME", {}};
  const ops::Conv2DGeometry g = geometry_of(cs);
  Tensor x = conv_test::random_tensor(DType::Float32, Shape{cs.n, cs.h, cs.w, cs.c}, rng);
  Tensor f = Tensor::empty(DType::Float32, Shape{cs.kh, cs.kw, cs.c, cs.k});
  for (i64 i = 0; i < x.num_elements(); ++i) x.data<float>()[i] = 3e37f * (i % 3 == 0 ? 1.0f : -1.0f);
  for (i64 i = 0; i < f.num_elements(); ++i) f.data<float>()[i] = i % 97 == 0 ? 0.25f : 0.0f;
  std::vector<float> raw(static_cast<std::size_t>(cs.n * g.out_rows * g.out_cols * cs.k));
  cpu::conv2d_forward_winograd(g, x.data<float>(), f.data<float>(), raw.data());
  bool overflowed = false;
  for (const float v : raw) overflowed = overflowed || !std::isfinite(v);
  REQUIRE(overflowed);  // the kernel alone overflows
  const Tensor generic = run_op("Conv2D", {x, f}, attrs_of(cs), {.kernel_path = "generic"}).at(0);
  const Tensor forced = run_op("Conv2D", {x, f}, attrs_of(cs), {.kernel_path = "winograd"}).at(0);
  for (i64 i = 0; i < generic.num_elements(); ++i) REQUIRE(std::isfinite(generic.data<float>()[i]));
  CHECK(same_bits(forced, generic));  // the finite rule recomputed it on the generic path
}

TEST_CASE("the winograd path passes the gradient checker", "[cpu][conv][winograd][autodiff]") {
  // Every conv node of the symbolic side (the op's gradients, themselves conv ops of the same
  // geometry) forced onto the winograd path; float32 against float64 central differences.
  std::mt19937_64 rng(7);
  for (const Conv& cs : {Conv{1, 6, 7, 16, 16, 5, 3, "SAME", {}}, Conv{2, 5, 6, 16, 17, 3, 4, "VALID", {}},
                         Conv{1, 7, 6, 16, 16, 3, 3, "SAME", {}, 2}})
    for (const char* op : kOps) {
      GradCheckOptions options;
      options.mode = GradCheckMode::Fast;
      options.backend = "cpu";
      options.kernel_path = "winograd";
      const GradCheckResult result = check_gradients(op, op_inputs(op, cs, DType::Float32, rng), attrs_of(cs), options);
      INFO(op << " " << describe(cs) << "\n" << result.report());
      CHECK(result.passed);
    }
}

TEST_CASE("DAGRAD_CONV_WINOGRAD=0 keeps unforced calls on direct sums; forcing still works; other values are errors",
          "[cpu][conv][winograd]") {
  std::mt19937_64 rng(8);
  const Conv cs{2, 9, 8, 16, 24, 3, 3, "SAME", {}};
  const ops::Conv2DGeometry g = geometry_of(cs);
  const std::vector<Tensor> in = op_inputs("Conv2D", cs, DType::Float32, rng);
  const auto chosen = [&] {
    return std::string(cpu::conv2d_choose_path(cpu::ConvOp::Forward, "Conv2D", g, DType::Float32, {}).name);
  };
  CHECK(chosen() == "winograd");
  {
    const testing::ScopedEnv on("DAGRAD_CONV_WINOGRAD", "1");
    CHECK(chosen() == "winograd");
  }
  {
    const testing::ScopedEnv off("DAGRAD_CONV_WINOGRAD", "0");
    CHECK(chosen() == "nhwc_fast");
    CHECK(same_bits(run_op("Conv2D", in, attrs_of(cs)).at(0),
                    run_op("Conv2D", in, attrs_of(cs), {.kernel_path = "nhwc_fast"}).at(0)));
    CHECK(std::string(cpu::conv2d_choose_path(cpu::ConvOp::BackpropFilter, "Conv2DBackpropFilterV2", g, DType::Float32,
                                              "winograd")
                          .name) == "winograd");
  }
  const testing::ScopedEnv bad("DAGRAD_CONV_WINOGRAD", "yes");
  CHECK_THAT(testing::error_of([&] { run_op("Conv2D", in, attrs_of(cs)); }),
             Catch::Matchers::Contains("DAGRAD_CONV_WINOGRAD: 'yes' is not 0 or 1"));
}
