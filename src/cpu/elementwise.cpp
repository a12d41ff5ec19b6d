#include "cpu/elementwise.h"

#include <cmath>

namespace strata {

void rms_norm(const float* x, const float* weight, int64_t n, float eps, float* out) {
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += double(x[i] * x[i]);
  const float mean = float(sum / double(n));
  const float scale = 1.0f / std::sqrt(mean + eps);
  if (weight) {
    for (int64_t i = 0; i < n; ++i) out[i] = (x[i] * scale) * weight[i];
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = x[i] * scale;
  }
}

void silu_mul(const float* gate, const float* up, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    out[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

void softmax(float* x, int64_t n) {
  float max = -INFINITY;
  for (int64_t i = 0; i < n; ++i) max = std::fmax(max, x[i]);
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - max);
    sum += double(x[i]);
  }
  const float inverse = float(1.0 / sum);
  for (int64_t i = 0; i < n; ++i) x[i] *= inverse;
}

float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

void add_scaled(float* y, const float* x, float scale, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += x[i] * scale;
}

}  // namespace strata
