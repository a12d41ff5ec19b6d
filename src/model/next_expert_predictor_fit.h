// Fitting the next-token expert predictor (model/next_expert_predictor.h) by ridge regression:
// for each layer, scores = W x + b least-squares fitted to the picks of the next `horizon`
// tokens as multi-hot vectors, from samples (router input of token t, experts the layer picked
// for t + 1, ..., t + horizon). Only the normal equations are kept (sum of a a^T and of a y^T,
// a = [x; 1], in double), so any number of tokens fits in (n_embd + 1) * (n_embd + 1 + horizon
// * n_expert) doubles per layer; every horizon shares the one a a^T.
//
// The ridge term is relative: ridge * (mean diagonal of sum x x^T) is added to the diagonal of
// the weights' part (not the bias), so it means the same whatever the scale of the hidden
// state. On strata-tiny-moe's held-out documents 1e-3..1e-2 were best (docs/cache-lab.md).
//
// Thread-compatibility: one thread at a time.
#pragma once

#include <strata/status.h>

#include <cstdint>
#include <span>
#include <vector>

namespace strata {

class NextExpertPredictorFit {
 public:
  static constexpr double kDefaultRidge = 3e-3;

  // REQUIRES: 1 <= horizon <= NextExpertPredictor::kMaxHorizon
  NextExpertPredictorFit(int64_t n_layer, int64_t n_embd, int64_t n_expert, int64_t horizon);

  int64_t horizon() const { return horizon_; }
  // One sample: `x` (n_embd) is what layer `layer`'s router read for a token, `picks_ahead[s -
  // 1]` the experts it chose for the token s after it (horizon() of them).
  void add(int layer, std::span<const float> x,
           std::span<const std::span<const int32_t>> picks_ahead);
  int64_t samples(int layer) const { return samples_[size_t(layer)]; }

  // weights [n_layer][horizon * n_expert][n_embd], biases [n_layer][horizon * n_expert], as
  // NextExpertPredictor::write takes them. Fails if a layer has fewer samples than 2, or its
  // equations are singular even with the ridge.
  struct Solution {
    std::vector<float> weights, biases;
  };
  Result<Solution> solve(double ridge) const;

 private:
  int64_t n_layer_, n_embd_, n_expert_, horizon_;
  std::vector<std::vector<double>> gram_;  // [layer][(n_embd + 1)^2], upper triangle filled
  // [layer][horizon * n_expert][n_embd + 1]: sum of y * a for each score
  std::vector<std::vector<double>> targets_;
  std::vector<int64_t> samples_;
};

}  // namespace strata
