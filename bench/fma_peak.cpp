// Independent FMA chains, enough of them (12) to cover the FMA latency times its throughput on
// current x86 cores, so the loop runs at the issue rate of the FMA units. Without -ffast-math the
// compiler may neither merge nor shorten the chains, and their sum is returned, so none is dropped.
#include "fma_peak.hpp"

#include <algorithm>
#include <chrono>

namespace dagrad_bench {
namespace {

constexpr int kChains = 12;

// One function per ISA (target attributes, no global -m flags): `lanes` floats per vector.
#define DAGRAD_FMA_CHAINS(NAME, TARGET, LANES)                                                     \
  __attribute__((target(TARGET))) double NAME(long iterations, float* sink) {                      \
    typedef float V __attribute__((vector_size((LANES)*4)));                                       \
    V acc[kChains];                                                                                \
    for (int i = 0; i < kChains; ++i) acc[i] = V{} + (1.0f + static_cast<float>(i) * 1e-7f);       \
    const V a = V{} + 0.999999f, b = V{} + 1e-7f;                                                  \
    const auto t0 = std::chrono::steady_clock::now();                                              \
    for (long it = 0; it < iterations; ++it) {                                                     \
      _Pragma("GCC unroll 12") for (int i = 0; i < kChains; ++i) acc[i] = acc[i] * a + b;          \
    }                                                                                              \
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); \
    V sum = V{};                                                                                   \
    for (int i = 0; i < kChains; ++i) sum += acc[i];                                               \
    *sink = sum[0];                                                                                \
    return static_cast<double>(iterations) * kChains * (LANES)*2 / s / 1e9;                        \
  }
DAGRAD_FMA_CHAINS(avx512_gflops, "avx512f", 16)
DAGRAD_FMA_CHAINS(avx2_gflops, "avx2,fma", 8)
#undef DAGRAD_FMA_CHAINS

}  // namespace

double measured_fma_peak_gflops(double seconds) {
  __builtin_cpu_init();
  double (*run)(long, float*) = __builtin_cpu_supports("avx512f")                                 ? avx512_gflops
                                : __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? avx2_gflops
                                                                                                  : nullptr;
  if (!run) return 0;
  float sink = 0;
  // Size the runs from a short one: about a tenth of `seconds` each, the best of ten.
  const long probe = 1'000'000;
  const double probe_gf = run(probe, &sink);
  const long iterations = std::max(probe, static_cast<long>(probe_gf * 1e9 * seconds / 10 / (kChains * 32)));
  double best = probe_gf;
  for (int i = 0; i < 10; ++i) best = std::max(best, run(iterations, &sink));
  return sink == sink ? best : best;  // reads the sink: the chains' results are used
}

}  // namespace dagrad_bench
