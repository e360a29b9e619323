// ApplyAdam's vectorised element loops give the scalar update's bits (ops::adam_update) on every
// set the CPU runs, with and without Nesterov, for lengths that leave every vector tail, and for
// accumulators spanning many magnitudes (denormal and zero second moments included).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "dagrad/backends/cpu/adam_kernels.hpp"
#include "dagrad/ops/training_updates.hpp"

namespace {

using namespace dagrad;

template <class T>
struct State {
  std::vector<T> w, m, v, g;
};

template <class T>
State<T> random_state(long long n, std::mt19937& rng) {
  std::uniform_real_distribution<double> unit(-1, 1), exponent(-45, 5);
  State<T> s;
  for (long long i = 0; i < n; ++i) {
    s.w.push_back(static_cast<T>(unit(rng)));
    s.m.push_back(static_cast<T>(unit(rng) * std::pow(10.0, exponent(rng))));
    s.v.push_back(i % 7 == 0 ? T(0) : static_cast<T>(std::pow(10.0, exponent(rng))));
    s.g.push_back(static_cast<T>(unit(rng) * std::pow(10.0, exponent(rng) / 4)));
  }
  return s;
}

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

template <class T, class Loop>
void check_set(Loop loop, bool nesterov) {
  std::mt19937 rng(nesterov ? 11 : 7);
  const cpu::AdamConstants k{3e-3, 0.9, 0.999, 1e-7, nesterov};
  for (long long n : {1LL, 5LL, 7LL, 8LL, 9LL, 15LL, 16LL, 17LL, 31LL, 1000LL}) {
    State<T> expected = random_state<T>(n, rng);
    State<T> got = expected;
    for (long long i = 0; i < n; ++i) {
      ops::adam_update(expected.w[i], expected.m[i], expected.v[i], static_cast<double>(expected.g[i]), k);
    }
    loop(got.w.data(), got.m.data(), got.v.data(), got.g.data(), n, k);
    INFO("n = " << n);
    CHECK(same_bits(got.w, expected.w));
    CHECK(same_bits(got.m, expected.m));
    CHECK(same_bits(got.v, expected.v));
  }
}

}  // namespace

TEST_CASE("ApplyAdam loops equal the scalar update bit for bit on every set", "[cpu][adam]") {
  for (const cpu::AdamKernels* set : cpu::usable_adam_kernels()) {
    for (bool nesterov : {false, true}) {
      INFO(set->name << (nesterov ? ", nesterov" : ""));
      check_set<float>(set->update_float, nesterov);
      check_set<double>(set->update_double, nesterov);
    }
  }
}
