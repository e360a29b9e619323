// Random valid pooling cases (window, strides, SAME / VALID / EXPLICIT padding, layout) for the
// tests that compare pooling kernels across backends.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "dagrad/core/attr.hpp"
#include "dagrad/core/shape.hpp"

namespace dagrad::testing {

struct PoolCase {
  AttrMap attrs;
  Shape input;
  bool explicit_padding = false;  // only the max-pool ops take EXPLICIT

  std::string describe() const {
    std::string text = "input " + input.to_string();
    for (const auto& [name, value] : attrs) text += " " + name + "=" + attr_to_string(value);
    return text;
  }
};

// Sizes up to max_batch x max_side x max_side x max_depth; nullopt when the draw is invalid
// (a VALID or EXPLICIT window larger than the padded input): draw again.
inline std::optional<PoolCase> random_pool_case(std::mt19937& rng, std::int64_t max_batch, std::int64_t max_side,
                                                std::int64_t max_depth) {
  using i64 = std::int64_t;
  auto pick = [&](i64 lo, i64 hi) { return std::uniform_int_distribution<i64>(lo, hi)(rng); };
  const bool nchw = pick(0, 1) == 1;
  const std::string padding =
      std::array<const char*, 3>{"SAME", "VALID", "EXPLICIT"}[static_cast<std::size_t>(pick(0, 2))];
  const bool same = padding == "SAME", explicit_padding = padding == "EXPLICIT";
  const i64 n = pick(1, max_batch), h = pick(1, max_side), w = pick(1, max_side), d = pick(1, max_depth);
  const i64 kr = pick(1, 4), kc = pick(1, 4), sr = pick(1, 3), sc = pick(1, 3);
  // EXPLICIT: each padding smaller than the window, as TF requires.
  const i64 pt = explicit_padding ? pick(0, kr - 1) : 0, pb = explicit_padding ? pick(0, kr - 1) : 0;
  const i64 pl = explicit_padding ? pick(0, kc - 1) : 0, pr = explicit_padding ? pick(0, kc - 1) : 0;
  if (!same && (kr > h + pt + pb || kc > w + pl + pr)) return std::nullopt;
  PoolCase c;
  c.attrs = {{"ksize", nchw ? std::vector<i64>{1, 1, kr, kc} : std::vector<i64>{1, kr, kc, 1}},
             {"strides", nchw ? std::vector<i64>{1, 1, sr, sc} : std::vector<i64>{1, sr, sc, 1}},
             {"padding", padding},
             {"data_format", std::string(nchw ? "NCHW" : "NHWC")}};
  if (explicit_padding) {
    c.attrs["explicit_paddings"] =
        nchw ? std::vector<i64>{0, 0, 0, 0, pt, pb, pl, pr} : std::vector<i64>{0, 0, pt, pb, pl, pr, 0, 0};
  }
  c.input = nchw ? Shape{n, d, h, w} : Shape{n, h, w, d};
  c.explicit_padding = explicit_padding;
  return c;
}

}  // namespace dagrad::testing
