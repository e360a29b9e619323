// The matrices of Winograd's minimal filtering F(m, r) (Lavin and Gray, "Fast Algorithms for
// Convolutional Neural Networks", 2016): m outputs of an r-tap correlation,
// y[i] = sum_k d[i + k] g[k], from n = m + r - 1 products,
//   y = AT [(G g) * (BT d)]     (* elementwise),
// and in two dimensions Y = AT [(G g G^T) * (BT d B)] A. Built by the Toom-Cook construction on
// n = 6 or 8 points: 0, 1, -1, 1/2, -2 (and 2, -1/2 for n = 8) and infinity, small points mixed in
// magnitude, whose float32 rounding errors stay within a few times the direct sums' on 6 points
// (F(4, 3), F(2, 5)) and about 4 times more on 8 (F(6, 3), F(4, 5): still half the 1e-5 of the
// largest magnitude every conv path meets).
#pragma once

#include <array>

namespace dagrad::cpu {

inline constexpr int kMaxWinogradTile = 8;  // n: the points

struct WinogradMatrices {
  int m = 0, r = 0, n = 0;                                           // outputs and taps, m + r - 1 = n
  std::array<double, kMaxWinogradTile * kMaxWinogradTile> output{};  // AT, m x n (row-major)
  std::array<double, kMaxWinogradTile * kMaxWinogradTile> filter{};  // G, n x r
  std::array<double, kMaxWinogradTile * kMaxWinogradTile> input{};   // BT, n x n (the same for every m, r)
};

// F(m, r) for m, r >= 1 with m + r - 1 = 6 or 8; InvalidArgument otherwise.
WinogradMatrices winograd_matrices(int m, int r);

}  // namespace dagrad::cpu
