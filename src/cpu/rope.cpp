#include "cpu/rope.h"

#include <cmath>

#include "base/check.h"

namespace strata {

RopeNeox::RopeNeox(int64_t head_dim, float freq_base) : head_dim_(head_dim), freq_base_(freq_base) {
  STRATA_CHECK(head_dim % 2 == 0 && head_dim <= kMaxHeadDim);
}

void RopeNeox::apply(float* heads, int64_t n_heads, int64_t pos) const {
  const int64_t half = head_dim_ / 2;
  // ggml builds the angles by repeated float multiplication (theta *= scale); doing the same
  // keeps us within float rounding of llama.cpp at every position.
  const float theta_scale = std::pow(freq_base_, -2.0f / float(head_dim_));
  float cos_theta[kMaxHeadDim / 2], sin_theta[kMaxHeadDim / 2];
  float theta = float(pos);
  for (int64_t i = 0; i < half; ++i) {
    cos_theta[i] = std::cos(theta);
    sin_theta[i] = std::sin(theta);
    theta *= theta_scale;
  }
  for (int64_t h = 0; h < n_heads; ++h) {
    float* v = heads + h * head_dim_;
    for (int64_t i = 0; i < half; ++i) {
      const float x0 = v[i], x1 = v[i + half];
      v[i] = x0 * cos_theta[i] - x1 * sin_theta[i];
      v[i + half] = x0 * sin_theta[i] + x1 * cos_theta[i];
    }
  }
}

}  // namespace strata
