#include "cpu/rope.h"

#include <cmath>

#include "base/check.h"

namespace strata {

RopeNeox::RopeNeox(int64_t head_dim, float freq_base) : head_dim_(head_dim), freq_base_(freq_base) {
  STRATA_CHECK(head_dim % 2 == 0 && head_dim <= kMaxHeadDim);
}

RopeNeox::Angles RopeNeox::angles(int64_t pos) const {
  // ggml builds the angles by repeated float multiplication (theta *= scale); doing the same
  // keeps us within float rounding of llama.cpp at every position.
  const float theta_scale = std::pow(freq_base_, -2.0f / float(head_dim_));
  Angles angles;
  float theta = float(pos);
  for (int64_t i = 0; i < head_dim_ / 2; ++i) {
    angles.cos[i] = std::cos(theta);
    angles.sin[i] = std::sin(theta);
    theta *= theta_scale;
  }
  return angles;
}

void RopeNeox::apply(float* heads, int64_t n_heads, const Angles& angles) const {
  const int64_t half = head_dim_ / 2;
  for (int64_t h = 0; h < n_heads; ++h) {
    float* v = heads + h * head_dim_;
    for (int64_t i = 0; i < half; ++i) {
      const float x0 = v[i], x1 = v[i + half];
      v[i] = x0 * angles.cos[i] - x1 * angles.sin[i];
      v[i + half] = x0 * angles.sin[i] + x1 * angles.cos[i];
    }
  }
}

}  // namespace strata
