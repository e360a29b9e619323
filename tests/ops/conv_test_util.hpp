// Helpers for the conv tests: random tensors, dot products, layout transposes, and an
// independent float64 oracle for Conv2D written differently from the reference kernel
// (explicitly padded NHWC input, one group at a time).
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include <dagrad/dagrad.hpp>

namespace conv_test {

using namespace dagrad;

inline Tensor random_tensor(DType dtype, const Shape& shape, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  Tensor t = Tensor::empty(DType::Float64, shape);
  for (std::int64_t i = 0; i < t.num_elements(); ++i) t.data<double>()[i] = dist(rng);
  return dtype == DType::Float64 ? t : t.cast(dtype);
}

inline Tensor iota_tensor(const Shape& shape, double start = 1.0) {
  Tensor t = Tensor::empty(DType::Float64, shape);
  for (std::int64_t i = 0; i < t.num_elements(); ++i) t.data<double>()[i] = start + static_cast<double>(i);
  return t;
}

inline std::vector<double> values(const Tensor& t) {
  std::vector<double> out;
  for (std::int64_t i = 0; i < t.num_elements(); ++i) out.push_back(t.value_as_double(i));
  return out;
}

inline double dot(const Tensor& a, const Tensor& b) {
  REQUIRE(a.shape() == b.shape());
  double sum = 0.0;
  for (std::int64_t i = 0; i < a.num_elements(); ++i) sum += a.value_as_double(i) * b.value_as_double(i);
  return sum;
}

inline double sum_abs_products(const Tensor& a, const Tensor& b) {
  double sum = 0.0;
  for (std::int64_t i = 0; i < a.num_elements(); ++i) sum += std::abs(a.value_as_double(i) * b.value_as_double(i));
  return sum;
}

// [N,H,W,C] <-> [N,C,H,W] for float64 tensors.
inline Tensor nhwc_to_nchw(const Tensor& t) {
  const Shape& s = t.shape();
  Tensor out = Tensor::empty(DType::Float64, Shape{s[0], s[3], s[1], s[2]});
  for (std::int64_t n = 0; n < s[0]; ++n)
    for (std::int64_t h = 0; h < s[1]; ++h)
      for (std::int64_t w = 0; w < s[2]; ++w)
        for (std::int64_t c = 0; c < s[3]; ++c)
          out.data<double>()[((n * s[3] + c) * s[1] + h) * s[2] + w] =
              t.data<double>()[((n * s[1] + h) * s[2] + w) * s[3] + c];
  return out;
}

inline Tensor nchw_to_nhwc(const Tensor& t) {
  const Shape& s = t.shape();
  Tensor out = Tensor::empty(DType::Float64, Shape{s[0], s[2], s[3], s[1]});
  for (std::int64_t n = 0; n < s[0]; ++n)
    for (std::int64_t c = 0; c < s[1]; ++c)
      for (std::int64_t h = 0; h < s[2]; ++h)
        for (std::int64_t w = 0; w < s[3]; ++w)
          out.data<double>()[((n * s[2] + h) * s[3] + w) * s[1] + c] =
              t.data<double>()[((n * s[1] + c) * s[2] + h) * s[3] + w];
  return out;
}

// An attribute list in data_format order from its row and column values.
inline std::vector<std::int64_t> spatial(const std::string& format, std::int64_t rows, std::int64_t cols) {
  return format == "NHWC" ? std::vector<std::int64_t>{1, rows, cols, 1} : std::vector<std::int64_t>{1, 1, rows, cols};
}

// Float64 Conv2D of NHWC x with HWIO w: zero-pad the input into a larger array first, then
// take a VALID dilated strided correlation per group. Pads are given per side.
inline Tensor oracle_conv2d_nhwc(const Tensor& x, const Tensor& w, std::int64_t stride_r, std::int64_t stride_c,
                                 std::int64_t dil_r, std::int64_t dil_c, std::int64_t top, std::int64_t bottom,
                                 std::int64_t left, std::int64_t right) {
  const std::int64_t N = x.shape()[0], H = x.shape()[1], W = x.shape()[2], C = x.shape()[3];
  const std::int64_t KH = w.shape()[0], KW = w.shape()[1], CI = w.shape()[2], K = w.shape()[3];
  const std::int64_t PH = H + top + bottom, PW = W + left + right;
  std::vector<double> padded(static_cast<std::size_t>(N * PH * PW * C), 0.0);
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t h = 0; h < H; ++h)
      for (std::int64_t c2 = 0; c2 < W; ++c2)
        for (std::int64_t ch = 0; ch < C; ++ch)
          padded[static_cast<std::size_t>(((n * PH + h + top) * PW + c2 + left) * C + ch)] =
              x.value_as_double(((n * H + h) * W + c2) * C + ch);
  const std::int64_t eff_r = (KH - 1) * dil_r + 1, eff_c = (KW - 1) * dil_c + 1;
  const std::int64_t OH = PH >= eff_r ? (PH - eff_r) / stride_r + 1 : 0;
  const std::int64_t OW = PW >= eff_c ? (PW - eff_c) / stride_c + 1 : 0;
  const std::int64_t groups = C / CI, per_group = K / groups;
  Tensor y = Tensor::zeros(DType::Float64, Shape{N, OH, OW, K});
  double* out = y.data<double>();
  for (std::int64_t grp = 0; grp < groups; ++grp)
    for (std::int64_t n = 0; n < N; ++n)
      for (std::int64_t oh = 0; oh < OH; ++oh)
        for (std::int64_t ow = 0; ow < OW; ++ow)
          for (std::int64_t k = grp * per_group; k < (grp + 1) * per_group; ++k) {
            double s = 0.0;
            for (std::int64_t a = 0; a < KH; ++a)
              for (std::int64_t b = 0; b < KW; ++b)
                for (std::int64_t ci = 0; ci < CI; ++ci)
                  s += padded[static_cast<std::size_t>(
                           ((n * PH + oh * stride_r + a * dil_r) * PW + ow * stride_c + b * dil_c) * C + grp * CI +
                           ci)] *
                       w.value_as_double(((a * KW + b) * CI + ci) * K + k);
            out[((n * OH + oh) * OW + ow) * K + k] = s;
          }
  return y;
}

}  // namespace conv_test
