#include "runtime/sampler.h"

#include <algorithm>
#include <cmath>

#include "cpu/topk.h"

namespace strata {

int32_t argmax(std::span<const float> logits) {
  // The best value in a register: reading it back through `best` made each step wait for the
  // last (a vocabulary of 152K took 0.6 ms a token on an H200 host).
  int32_t best = 0;
  float best_logit = logits[0];
  for (size_t i = 1; i < logits.size(); ++i)
    if (logits[i] > best_logit) {
      best_logit = logits[i];
      best = int32_t(i);
    }
  return best;
}

Sampler::Sampler(const SamplerOptions& options) : options_(options), rng_(options.seed) {}

double Sampler::uniform() { return double(rng_() >> 11) * 0x1.0p-53; }

std::span<const float> Sampler::apply_repeat_penalty(std::span<const float> logits,
                                                     std::span<const int32_t> recent) {
  if (options_.repeat_penalty == 1.0f || options_.repeat_last_n <= 0) return logits;
  const size_t n = std::min(recent.size(), size_t(options_.repeat_last_n));
  penalized_.assign(logits.begin(), logits.end());
  // Each token is penalised once however often it recurs; ids outside the vocabulary are
  // ignored.
  std::vector<int32_t>& seen = seen_scratch_;
  seen.assign(recent.end() - ptrdiff_t(n), recent.end());
  std::sort(seen.begin(), seen.end());
  seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
  // As llama.cpp (and CTRL): divide positive logits, multiply negative ones.
  for (const int32_t id : seen) {
    if (id < 0 || size_t(id) >= penalized_.size()) continue;
    float& logit = penalized_[size_t(id)];
    logit = logit > 0 ? logit / options_.repeat_penalty : logit * options_.repeat_penalty;
  }
  return penalized_;
}

void Sampler::keep_best(std::span<const float> logits, size_t k) {
  candidates_.clear();
  if (k >= logits.size()) {
    // Best first: higher logit, then lower id.
    for (size_t i = 0; i < logits.size(); ++i) candidates_.push_back({int32_t(i), logits[i], 0.0f});
    std::sort(candidates_.begin(), candidates_.end(), [](const Candidate& a, const Candidate& b) {
      return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
    });
    return;
  }
  best_ids_.resize(k);
  top_k(logits.data(), int64_t(logits.size()), int(k), best_ids_.data());
  for (const int32_t id : best_ids_) candidates_.push_back({id, logits[size_t(id)], 0.0f});
}

int32_t Sampler::sample(std::span<const float> logits, std::span<const int32_t> recent) {
  const std::span<const float> penalized = apply_repeat_penalty(logits, recent);
  if (options_.temperature <= 0) return argmax(penalized);
  keep_best(penalized, options_.top_k > 0 ? size_t(options_.top_k) : penalized.size());

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
