// The per-element updates of ApplyGradientDescent, ApplyMomentum and ApplyAdam with TF's formulas,
// shared by the reference and CPU kernels: double arithmetic, one rounding per stored value, the
// rounded accumulators read back as TF reads them, so both backends give the same bits.
#pragma once

#include <cmath>

#include "dagrad/core/dtype.hpp"

namespace dagrad::ops {

template <class T>
void gradient_descent_update(T& w, double alpha, double delta) {
  w = narrow<T>(widen<T>(w) - alpha * delta);
}

// accum = accum * momentum + grad; var -= lr * accum (Nesterov: lr * (grad + momentum * accum)).
template <class T>
void momentum_update(T& w, T& accum, double g, double lr, double momentum, bool nesterov) {
  accum = narrow<T>(widen<T>(accum) * momentum + g);
  const double acc = widen<T>(accum);
  w = narrow<T>(widen<T>(w) - (nesterov ? g * lr + acc * momentum * lr : lr * acc));
}

struct AdamCoefficients {
  double lr_t, beta1, beta2, epsilon;
  bool nesterov;
  // TF's alpha: the bias correction folded into the step size; epsilon goes after the sqrt.
  AdamCoefficients(double lr, double beta1_power, double beta2_power, double b1, double b2, double eps, bool nest)
      : lr_t(lr * std::sqrt(1 - beta2_power) / (1 - beta1_power)), beta1(b1), beta2(b2), epsilon(eps), nesterov(nest) {}
};

// K: AdamCoefficients, or any struct with its fields (the CPU backend's AdamConstants).
template <class T, class K>
void adam_update(T& w, T& m, T& v, double g, const K& k) {
  m = narrow<T>(widen<T>(m) + (g - widen<T>(m)) * (1 - k.beta1));
  v = narrow<T>(widen<T>(v) + (g * g - widen<T>(v)) * (1 - k.beta2));
  const double mi = widen<T>(m), vi = widen<T>(v);
  const double step = k.nesterov ? (mi * k.beta1 + (1 - k.beta1) * g) : mi;
  w = narrow<T>(widen<T>(w) - k.lr_t * step / (std::sqrt(vi) + k.epsilon));
}

}  // namespace dagrad::ops
