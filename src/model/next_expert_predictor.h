// The next-token expert predictor: per layer, a linear map from what the router reads for one
// token (the normed hidden state) to a score per expert for each of the next `horizon` tokens'
// visits of the layer: an estimate of the chance that the expert is used then. The cache policy
// "predicted" (experts/next_use_policy.h) weighs it in to judge which units will be needed when
// the layer comes round again.
//
// Why: the router itself says little about the next token (its probabilities for this token
// hold 48.6 % of the next token's experts in a layer's top quarter on strata-tiny-moe), but the
// hidden state carries what the model expects next. A map fitted by least squares on a few
// dozen documents holds ~71 % on held-out ones; a decayed count of past picks, ~56 %
// (docs/cache-lab.md). Two tokens ahead by default: in the real arena at 25 % on those
// documents, hits 59.6 % with one, 59.9 % with two, 59.8 % with three. Why look beyond one
// token: in a simulation of the policy, perfect estimates for the next token alone would reach
// 0.84 of MIN's hits, for the next two 0.89 (bench/experiments/next_expert_predictor).
//
// File: a GGUF of its own, written by `strata fit-predictor` (tools/fit_predictor_command.cpp):
//   general.architecture        "strata-next-experts"
//   strata.next_experts.n_layer, .n_embd, .n_expert   (uint32), must match the model
//   strata.next_experts.horizon (uint32) tokens ahead it scores; 1 when absent
//   strata.next_experts.source  (string) what it was fitted on, for people
//   blk.N.next_experts.weight   F32, ne {n_embd, horizon * n_expert}: row (s - 1) * n_expert + e
//                               scores expert e for the token s after the one it reads
//   blk.N.next_experts.bias     F32, ne {horizon * n_expert}
//
// Thread-safety: immutable after load.
#pragma once

#include <strata/status.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backend/tensors.h"

namespace strata {

class NextExpertPredictor {
 public:
  static constexpr const char* kArchitecture = "strata-next-experts";
  static constexpr int64_t kMaxHorizon = 16;
  static constexpr int64_t kDefaultHorizon = 2;  // see above

  // Fails with one line naming the file for anything but a predictor of this shape.
  static Result<std::shared_ptr<const NextExpertPredictor>> load(const std::string& path,
                                                                 int64_t n_layer, int64_t n_embd,
                                                                 int64_t n_expert);
  // The memory load() will hold for the file at `path` (the plan counts it before loading).
  static Result<uint64_t> bytes_to_load(const std::string& path, int64_t n_layer, int64_t n_embd,
                                        int64_t n_expert);
  // weights [n_layer][horizon * n_expert][n_embd], biases [n_layer][horizon * n_expert];
  // written atomically.
  static Status write(const std::string& path, int64_t n_layer, int64_t n_embd, int64_t n_expert,
                      int64_t horizon, std::span<const float> weights,
                      std::span<const float> biases, const std::string& source);

  NextExpertPredictor(int64_t n_layer, int64_t n_embd, int64_t n_expert, int64_t horizon,
                      std::vector<float> weights, std::vector<float> biases);

  // Layer `layer`'s map as a matrix: scores = matrix * x + bias(layer), x what the layer's
  // router reads for a token, scores (n_scores(): horizon blocks of n_expert) about the tokens
  // after it.
  Matrix matrix(int layer) const;
  std::span<const float> bias(int layer) const;
  int64_t horizon() const { return horizon_; }
  int64_t n_scores() const { return horizon_ * n_expert_; }
  // Memory it holds (the plan counts it).
  uint64_t bytes() const { return (weights_.size() + biases_.size()) * sizeof(float); }

 private:
  int64_t n_layer_, n_embd_, n_expert_, horizon_;
  std::vector<float> weights_, biases_;
};

}  // namespace strata
