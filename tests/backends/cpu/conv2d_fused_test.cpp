// _FusedConv2D on the CPU conv rows that apply its epilogue in the kernel (strips, winograd): the
// bits of Conv2D on the same row followed by BiasAdd and Relu, with and without Relu; where the
// row's finite rule sends the call to the generic path (a padded filter holding NaN for strips,
// results that overflow in Winograd's transforms), the unfused generic result; every row that has
// a fused kernel is exercised. bfloat16 alike: its fused kernels apply the epilogue to their float32
// sums (each rounded to bfloat16 first) before they narrow.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <dagrad/dagrad.hpp>

#include "dagrad/backends/cpu/bias_add.hpp"
#include "dagrad/backends/cpu/conv2d/kernels.hpp"
#include "dagrad/backends/cpu/conv2d/paths.hpp"

namespace {

using namespace dagrad;
using i64 = std::int64_t;

// One call's geometry and values, in float32 or (CallOf<bfloat16>) rounded to bfloat16.
template <class T>
struct CallOf {
  ops::Conv2DGeometry g;
  std::vector<T> x, f, bias;
};
using Call = CallOf<float>;
using Bf16Call = CallOf<bfloat16>;

Call make_call(i64 n, i64 h, i64 w, i64 c, i64 k, i64 taps, std::mt19937& rng) {
  ops::Conv2DOptions options{.strides = {1, 1, 1, 1}, .padding = "SAME"};
  Call call{ops::conv2d_geometry("Conv2D", ops::parse_conv2d_attrs("Conv2D", ops::conv2d_attr_map(options)),
                                 Shape{n, h, w, c}, Shape{taps, taps, c, k}),
            {},
            {},
            {}};
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (auto* v : {&call.x, &call.f})
    v->resize(static_cast<std::size_t>(v == &call.x ? n * h * w * c : taps * taps * c * k));
  call.bias.resize(static_cast<std::size_t>(k));
  for (auto* v : {&call.x, &call.f, &call.bias})
    for (float& e : *v) e = u(rng);
  return call;
}

Bf16Call to_bfloat16(const Call& call) {
  const auto round = [](const std::vector<float>& v) { return std::vector<bfloat16>(v.begin(), v.end()); };
  return {call.g, round(call.x), round(call.f), round(call.bias)};
}

// Conv2D on `path`, then BiasAdd and Relu as their own passes.
template <class T>
std::vector<T> unfused(const CallOf<T>& call, std::string_view path, bool relu) {
  const ops::Conv2DGeometry& g = call.g;
  std::vector<T> y(static_cast<std::size_t>(g.batch * g.out_rows * g.out_cols * g.out_depth));
  cpu::conv2d_forward<T>(g, call.x.data(), call.f.data(), y.data(), path);
  cpu::bias_add_relu(y.data(), call.bias.data(), y.data(), {g.batch * g.out_rows * g.out_cols, g.out_depth, 1},
                     static_cast<i64>(y.size()), relu);
  return y;
}

template <class T>
std::vector<T> fused(const CallOf<T>& call, std::string_view path, bool relu, std::string_view* ran = nullptr) {
  const ops::Conv2DGeometry& g = call.g;
  std::vector<T> y(static_cast<std::size_t>(g.batch * g.out_rows * g.out_cols * g.out_depth));
  const std::string_view name =
      cpu::conv2d_forward_fused<T>(g, call.x.data(), call.f.data(), call.bias.data(), relu, y.data(), path);
  if (ran) *ran = name;
  return y;
}

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

}  // namespace

TEST_CASE("fused Conv2D kernels give the bits of Conv2D, BiasAdd and Relu run one by one", "[cpu][conv][fusion]") {
  std::mt19937 rng(11);
  std::set<std::string_view> covered;
  // A first layer (strips), train_cnn's second (winograd on 8 x 8 tiles), a 3x3 one (6 x 6 tiles).
  for (const Call& call : {make_call(2, 9, 11, 1, 32, 5, rng), make_call(3, 14, 14, 32, 64, 5, rng),
                           make_call(2, 9, 10, 16, 24, 3, rng)}) {
    const std::string_view path =
        cpu::conv2d_choose_path(cpu::ConvOp::Forward, "Conv2D", call.g, DType::Float32, {}).name;
    for (const bool relu : {false, true}) {
      std::string_view ran;
      const std::vector<float> y = fused(call, path, relu, &ran);
      INFO(path << (relu ? " with Relu" : ""));
      CHECK(ran == path);
      CHECK(same_bits(y, unfused(call, path, relu)));
      CHECK(same_bits(fused(call, "generic", relu), unfused(call, "generic", relu)));  // no fused kernel: a pass
    }
    covered.insert(path);
  }
  for (const cpu::ConvPath& row : cpu::conv2d_path_table(cpu::ConvOp::Forward))
    if (row.fused_float_kernel) {
      INFO(row.name);
      CHECK(covered.count(row.name) == 1);
    }
}

TEST_CASE("fused bfloat16 Conv2D kernels give the bits of Conv2D, BiasAdd and Relu run one by one",
          "[cpu][conv][fusion]") {
  std::mt19937 rng(13);
  std::set<std::string_view> covered;
  // First layers widened (5x5x1) and, with AVX-512 BF16, on row pairs (7x7x1: 49 values a window);
  // train_cnn's second layer and a 3x3 one on Winograd's tiles.
  for (const Call& wide : {make_call(2, 9, 11, 1, 32, 5, rng), make_call(2, 12, 10, 1, 16, 7, rng),
                           make_call(3, 14, 14, 32, 64, 5, rng), make_call(2, 9, 10, 16, 24, 3, rng)}) {
    const Bf16Call call = to_bfloat16(wide);
    const std::string_view path =
        cpu::conv2d_choose_path(cpu::ConvOp::Forward, "Conv2D", call.g, DType::BFloat16, {}).name;
    for (const bool relu : {false, true}) {
      std::string_view ran;
      const std::vector<bfloat16> y = fused(call, path, relu, &ran);
      INFO(path << (relu ? " with Relu" : ""));
      CHECK(ran == path);
      CHECK(same_bits(y, unfused(call, path, relu)));
    }
    covered.insert(path);
  }
  for (const cpu::ConvPath& row : cpu::conv2d_path_table(cpu::ConvOp::Forward))
    if (row.fused_bfloat16_kernel) {
      INFO(row.name);
      CHECK(covered.count(row.name) == 1);
    }
}

TEST_CASE("fused Conv2D kernels keep their rows' finite rules", "[cpu][conv][fusion]") {
  std::mt19937 rng(12);
  SECTION("strips: a padded call whose filter holds NaN runs on the generic path") {
    Call call = make_call(1, 6, 7, 1, 16, 3, rng);
    call.f[4] = std::nanf("");
    std::string_view ran;
    const std::vector<float> y = fused(call, {}, true, &ran);
    CHECK(ran == "generic");
    CHECK(same_bits(y, unfused(call, "generic", true)));
  }
  SECTION("winograd: outputs that overflow in the transforms are computed again, and Relu does not hide them") {
    // Inputs of 3e37 overflow in the input transform though every direct product and sum stays
    // finite; with Relu, a NaN or -Inf of the transforms would otherwise come out as 0.
    Call call = make_call(1, 8, 8, 16, 16, 3, rng);
    for (std::size_t i = 0; i < call.x.size(); ++i) call.x[i] = 3e37f * (i % 3 == 0 ? 1.0f : -1.0f);
    for (std::size_t i = 0; i < call.f.size(); ++i) call.f[i] = i % 97 == 0 ? 0.25f : 0.0f;
    std::string_view ran;
    const std::vector<float> y = fused(call, "winograd", true, &ran);
    CHECK(ran == "generic");
    CHECK(same_bits(y, unfused(call, "generic", true)));
    for (const float v : y) REQUIRE(std::isfinite(v));
    const Bf16Call narrow = to_bfloat16(call);  // the same values in bfloat16
    const std::vector<bfloat16> y16 = fused(narrow, "winograd", true, &ran);
    CHECK(ran == "generic");
    CHECK(same_bits(y16, unfused(narrow, "generic", true)));
  }
}
