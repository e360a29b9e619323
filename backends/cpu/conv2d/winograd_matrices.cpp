// Toom-Cook: a polynomial product s = u v (u of degree m - 1, v of degree r - 1) is recovered from
// its values at n points, s = V^-1 [(E_m u) * (E_r v)], where E_k evaluates a polynomial of k
// coefficients (the row of infinity takes the leading one). The correlation y is the transpose of
// that product with respect to u (d.s = u.y for every u), hence AT = E_m^T, G = E_r, BT = V^-T.
// Column j of V^-1 holds the coefficients of the Lagrange polynomial of point j,
// prod_{l != j} (x - p_l) / s_j with s_j = prod_{l != j} (p_j - p_l) (for infinity: prod_l (x - p_l),
// s = 1); the factor s_j moves into row j of G, so BT holds halves, exact in binary, and the
// other fractions (thirds, fifteenths) are in G, which transforms the filter.
#include "dagrad/backends/cpu/conv2d/winograd_matrices.hpp"

#include "dagrad/core/error.hpp"

namespace dagrad::cpu {
namespace {

constexpr int kMaxN = kMaxWinogradTile;
// The first n - 1 of them, and infinity, the last row. With 1/2 in place of 2, float32 errors on
// 6 points came out 2 to 3 times smaller than on {0, 1, -1, 2, -2} (simulated: F(2, 5) and
// F(4, 3), Conv2D and the filter gradient); on 8 points the set is the usual one.
constexpr double kPoints[kMaxN - 1] = {0, 1, -1, 0.5, -2, 2, -0.5};

double power(double x, int e) {
  double p = 1;
  for (int i = 0; i < e; ++i) p *= x;
  return p;
}

// The coefficients (lowest first) of prod over the first n - 1 points but l = skip of (x - p_l).
std::array<double, kMaxN> product_but(int n, int skip) {
  std::array<double, kMaxN> c{};
  c[0] = 1;
  int degree = 0;
  for (int l = 0; l < n - 1; ++l) {
    if (l == skip) continue;
    for (int i = degree + 1; i > 0; --i) c[i] = c[i - 1] - kPoints[l] * c[i];
    c[0] = -kPoints[l] * c[0];
    ++degree;
  }
  return c;
}

}  // namespace

WinogradMatrices winograd_matrices(int m, int r) {
  const int n = m + r - 1;
  if (m < 1 || r < 1 || (n != 6 && n != kMaxN))
    invalid_argument("Winograd F(", m, ", ", r, "): needs m, r >= 1 with m + r - 1 = 6 or ", kMaxN);
  WinogradMatrices w;
  w.m = m;
  w.r = r;
  w.n = n;
  for (int j = 0; j < n; ++j) {
    const bool infinite = j == n - 1;
    double scale = 1;  // s_j
    if (!infinite)
      for (int l = 0; l < n - 1; ++l)
        if (l != j) scale *= kPoints[j] - kPoints[l];
    for (int i = 0; i < m; ++i) w.output[i * n + j] = infinite ? (i == m - 1 ? 1 : 0) : power(kPoints[j], i);
    for (int k = 0; k < r; ++k) w.filter[j * r + k] = infinite ? (k == r - 1 ? 1 : 0) : power(kPoints[j], k) / scale;
    const std::array<double, kMaxN> lagrange = product_but(n, infinite ? -1 : j);
    for (int i = 0; i < n; ++i) w.input[j * n + i] = lagrange[i];
  }
  return w;
}

}  // namespace dagrad::cpu
