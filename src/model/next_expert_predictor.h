// The next-token expert predictor: per layer, a linear map from what the router reads for one
// token (the normed hidden state) to a score per expert for the *next* token's visit of the
// layer: an estimate of the chance that the expert is used then. The cache policy "predicted"
// (experts/next_use_policy.h) weighs it in to judge which units will be needed when the layer
// comes round again.
//
// Why: the router itself says little about the next token (its probabilities for this token
// hold 48.6 % of the next token's experts in a layer's top quarter on strata-tiny-moe), but the
// hidden state carries what the model expects next. A map fitted by least squares on a few
// dozen documents holds ~71 % on held-out ones; a decayed count of past picks, ~56 %
// (README "Cache lab").
//
// File: a GGUF of its own, written by `strata fit-predictor` (runtime/predictor_fitting.h):
//   general.architecture        "strata-next-experts"
//   strata.next_experts.n_layer, .n_embd, .n_expert   (uint32), must match the model
//   strata.next_experts.source  (string) what it was fitted on, for people
//   blk.N.next_experts.weight   F32, ne {n_embd, n_expert}: row e scores expert e
//   blk.N.next_experts.bias     F32, ne {n_expert}
//
// Thread-safety: immutable after load.
#pragma once

#include <strata/status.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "cpu/matmul.h"

namespace strata {

class NextExpertPredictor {
 public:
  static constexpr const char* kArchitecture = "strata-next-experts";

  // Fails with one line naming the file for anything but a predictor of this shape.
  static Result<std::shared_ptr<const NextExpertPredictor>> load(const std::string& path,
                                                                 int64_t n_layer, int64_t n_embd,
                                                                 int64_t n_expert);
  // weights [n_layer][n_expert][n_embd], biases [n_layer][n_expert]; written atomically.
  static Status write(const std::string& path, int64_t n_layer, int64_t n_embd, int64_t n_expert,
                      std::span<const float> weights, std::span<const float> biases,
                      const std::string& source);

  NextExpertPredictor(int64_t n_layer, int64_t n_embd, int64_t n_expert,
                      std::vector<float> weights, std::vector<float> biases);

  // Layer `layer`'s map as a matrix: scores = matrix * x + bias(layer), x what the layer's
  // router reads for a token, scores (n_expert) about the token after it.
  Matrix matrix(int layer) const;
  std::span<const float> bias(int layer) const;
  int64_t n_expert() const { return n_expert_; }
  // Memory it holds (the plan counts it).
  uint64_t bytes() const { return (weights_.size() + biases_.size()) * sizeof(float); }
  static uint64_t bytes_for(int64_t n_layer, int64_t n_embd, int64_t n_expert) {
    return uint64_t(n_layer) * uint64_t(n_expert) * uint64_t(n_embd + 1) * sizeof(float);
  }

 private:
  int64_t n_layer_, n_embd_, n_expert_;
  std::vector<float> weights_, biases_;
};

}  // namespace strata
