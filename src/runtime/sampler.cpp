#include "runtime/sampler.h"

#include <algorithm>
#include <cmath>
#include <unordered_set>

namespace strata {

int32_t argmax(std::span<const float> logits) {
  int32_t best = 0;
  for (size_t i = 1; i < logits.size(); ++i)
    if (logits[i] > logits[size_t(best)]) best = int32_t(i);
  return best;
}

Sampler::Sampler(const SamplerOptions& options) : options_(options), rng_(options.seed) {}

double Sampler::uniform() { return double(rng_() >> 11) * 0x1.0p-53; }

void Sampler::apply_repeat_penalty(std::span<const int32_t> recent) {
  if (options_.repeat_penalty == 1.0f || options_.repeat_last_n <= 0) return;
  const size_t n = std::min(recent.size(), size_t(options_.repeat_last_n));
  const std::unordered_set<int32_t> seen(recent.end() - ptrdiff_t(n), recent.end());
  // As llama.cpp (and CTRL): divide positive logits, multiply negative ones.
  for (Candidate& c : candidates_)
    if (seen.count(c.id))
      c.logit = c.logit > 0 ? c.logit / options_.repeat_penalty : c.logit * options_.repeat_penalty;
}

int32_t Sampler::sample(std::span<const float> logits, std::span<const int32_t> recent) {
  candidates_.resize(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) candidates_[i] = {int32_t(i), logits[i], 0.0f};
  apply_repeat_penalty(recent);

  auto by_logit = [](const Candidate& a, const Candidate& b) {
    return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
  };
  if (options_.temperature <= 0) {
    return std::min_element(candidates_.begin(), candidates_.end(), by_logit)->id;
  }
  size_t keep = candidates_.size();
  if (options_.top_k > 0) keep = std::min(keep, size_t(options_.top_k));
  std::partial_sort(candidates_.begin(), candidates_.begin() + ptrdiff_t(keep), candidates_.end(),
                    by_logit);
  candidates_.resize(keep);

  auto normalise = [&](float temperature) {
    const float max = candidates_.front().logit;
    double sum = 0;
    for (Candidate& c : candidates_) {
      c.probability = std::exp((c.logit - max) / temperature);
      sum += c.probability;
    }
    for (Candidate& c : candidates_) c.probability = float(c.probability / sum);
  };
  normalise(1.0f);
  if (options_.top_p < 1.0f) {
    double cumulative = 0;
    size_t n = 0;
    while (n < candidates_.size() && cumulative < options_.top_p)
      cumulative += candidates_[n++].probability;
    candidates_.resize(std::max<size_t>(n, 1));
  }
  if (options_.min_p > 0) {
    const float threshold = candidates_.front().probability * options_.min_p;
    size_t n = 1;
    while (n < candidates_.size() && candidates_[n].probability >= threshold) ++n;
    candidates_.resize(n);
  }
  normalise(options_.temperature);

  double draw = uniform();
  for (const Candidate& c : candidates_) {
    draw -= c.probability;
    if (draw < 0) return c.id;
  }
  return candidates_.back().id;
}

}  // namespace strata
