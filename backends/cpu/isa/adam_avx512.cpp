// ApplyAdam's element update over float32 and float64 arrays with AVX-512, 8 double lanes a step:
// the arithmetic of ops::adam_update (TF's formula in double, one rounding per stored value, the
// rounded accumulators read back) in the same order, with no fused multiply-adds (this file is
// compiled with -ffp-contract=off), so every lane gives the scalar loop's bits: IEEE's add,
// multiply, divide and square root round exactly once, in any lane. The tail is one masked step.
// No library header with inline functions (see convert_f16c.cpp).
#include <immintrin.h>

#include "dagrad/backends/cpu/isa/adam_constants.hpp"

namespace dagrad::cpu::avx512_adam {
namespace {

using i64 = long long;

struct Lanes {
  __m512d one_minus_beta1, one_minus_beta2, beta1, lr_t, epsilon;
  explicit Lanes(const AdamConstants& k)
      : one_minus_beta1(_mm512_set1_pd(1 - k.beta1)),
        one_minus_beta2(_mm512_set1_pd(1 - k.beta2)),
        beta1(_mm512_set1_pd(k.beta1)),
        lr_t(_mm512_set1_pd(k.lr_t)),
        epsilon(_mm512_set1_pd(k.epsilon)) {}
};

// Loads and stores of 8 elements (or `mask`'s lanes) widened to / narrowed from double.
struct FloatIo {
  static __m512d load(const float* p, __mmask8 mask) { return _mm512_cvtps_pd(_mm256_maskz_loadu_ps(mask, p)); }
  static __m512d store(float* p, __m512d x, __mmask8 mask) {
    const __m256 narrowed = _mm512_cvtpd_ps(x);  // round to nearest even, as static_cast<float>
    _mm256_mask_storeu_ps(p, mask, narrowed);
    return _mm512_cvtps_pd(narrowed);  // the stored value, read back as TF reads it
  }
};
struct DoubleIo {
  static __m512d load(const double* p, __mmask8 mask) { return _mm512_maskz_loadu_pd(mask, p); }
  static __m512d store(double* p, __m512d x, __mmask8 mask) {
    _mm512_mask_storeu_pd(p, mask, x);
    return x;
  }
};

template <class Io, bool kNesterov, class T>
inline void update8(T* w, T* m, T* v, const T* g, const Lanes& k, __mmask8 mask) {
  const __m512d gi = Io::load(g, mask);
  const __m512d mo = Io::load(m, mask), vo = Io::load(v, mask);
  // m += (g - m) * (1 - beta1); v += (g * g - v) * (1 - beta2)
  const __m512d mi = Io::store(m, _mm512_add_pd(mo, _mm512_mul_pd(_mm512_sub_pd(gi, mo), k.one_minus_beta1)), mask);
  const __m512d vi =
      Io::store(v, _mm512_add_pd(vo, _mm512_mul_pd(_mm512_sub_pd(_mm512_mul_pd(gi, gi), vo), k.one_minus_beta2)), mask);
  // Nesterov: m * beta1 + (1 - beta1) * g
  const __m512d step = kNesterov ? _mm512_add_pd(_mm512_mul_pd(mi, k.beta1), _mm512_mul_pd(k.one_minus_beta1, gi)) : mi;
  // w -= lr_t * step / (sqrt(v) + epsilon)
  const __m512d delta = _mm512_div_pd(_mm512_mul_pd(k.lr_t, step), _mm512_add_pd(_mm512_sqrt_pd(vi), k.epsilon));
  Io::store(w, _mm512_sub_pd(Io::load(w, mask), delta), mask);
}

template <class Io, bool kNesterov, class T>
void update(T* w, T* m, T* v, const T* g, i64 count, const AdamConstants& constants) {
  const Lanes k(constants);
  i64 i = 0;
  for (; i + 8 <= count; i += 8) update8<Io, kNesterov>(w + i, m + i, v + i, g + i, k, 0xff);
  if (i < count) {
    const auto mask = static_cast<__mmask8>((1u << (count - i)) - 1);
    update8<Io, kNesterov>(w + i, m + i, v + i, g + i, k, mask);
  }
}

}  // namespace

void update_float(float* w, float* m, float* v, const float* g, i64 count, const AdamConstants& k) {
  k.nesterov ? update<FloatIo, true>(w, m, v, g, count, k) : update<FloatIo, false>(w, m, v, g, count, k);
}

void update_double(double* w, double* m, double* v, const double* g, i64 count, const AdamConstants& k) {
  k.nesterov ? update<DoubleIo, true>(w, m, v, g, count, k) : update<DoubleIo, false>(w, m, v, g, count, k);
}

}  // namespace dagrad::cpu::avx512_adam
