// Choosing the next token from logits. The chain follows llama.cpp's default order:
// repetition penalty -> top-k -> top-p -> min-p -> temperature -> draw. Temperature <= 0 is
// greedy (argmax, lowest id on ties). Draws use a seeded generator with our own
// uint64 -> [0,1) conversion, so a seed gives the same tokens on every platform.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

namespace strata {

struct SamplerOptions {
  float temperature = 0.8f;
  int top_k = 40;               // <= 0: off
  float top_p = 0.95f;          // >= 1: off
  float min_p = 0.05f;          // <= 0: off
  float repeat_penalty = 1.0f;  // 1: off
  int repeat_last_n = 64;       // how many recent tokens the penalty looks at
  uint64_t seed = 0;
};

class Sampler {
 public:
  explicit Sampler(const SamplerOptions& options);

  // `recent` holds the tokens generated or read so far (the penalty looks at the last
  // repeat_last_n of them).
  int32_t sample(std::span<const float> logits, std::span<const int32_t> recent);

 private:
  struct Candidate {
    int32_t id;
    float logit;
    float probability;
  };
  // The logits with the repetition penalty applied (a copy in penalized_, or `logits` itself
  // when the penalty is off).
  std::span<const float> apply_repeat_penalty(std::span<const float> logits,
                                              std::span<const int32_t> recent);
  // candidates_ = the k best of `logits`, best first (higher logit, then lower id).
  void keep_best(std::span<const float> logits, size_t k);
  double uniform();

  SamplerOptions options_;
  std::mt19937_64 rng_;
  std::vector<Candidate> candidates_;
  std::vector<float> penalized_;
  std::vector<int32_t> seen_scratch_;
  std::vector<int32_t> best_ids_;
};

int32_t argmax(std::span<const float> logits);

}  // namespace strata
