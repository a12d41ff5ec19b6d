// Rotary position embedding, NEOX layout (what qwen2/qwen3 use): dimension i of a head is
// rotated together with dimension i + head_dim/2 by the angle pos * base^(-2i/head_dim).
#pragma once

#include <cstdint>
#include <vector>

namespace strata {

class RopeNeox {
 public:
  // REQUIRES: head_dim even and <= kMaxHeadDim.
  static constexpr int64_t kMaxHeadDim = 1024;
  RopeNeox(int64_t head_dim, float freq_base);

  // The rotation angles of one position, computed once for all the heads (q and k) rotated
  // there.
  struct Angles {
    float cos[kMaxHeadDim / 2];
    float sin[kMaxHeadDim / 2];
  };
  Angles angles(int64_t pos) const;

  // Rotates n_heads consecutive vectors of head_dim floats by one position's angles, in place.
  void apply(float* heads, int64_t n_heads, const Angles& angles) const;

 private:
  int64_t head_dim_;
  float freq_base_;
};

}  // namespace strata
