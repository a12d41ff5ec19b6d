// The resident (dense) weights of a MoE transformer, bound to the model file by the
// architecture's loader. Matrices point into the model's tensor data; 1-D weights (norms,
// biases) are converted to float at load.
#pragma once

#include <vector>

#include "backend/layer_weights.h"
#include "experts/expert_layout.h"

namespace strata {

struct LayerWeights {
  AttentionWeights attention;
  Vector ffn_norm;             // [n_embd]
  Matrix router;               // n_embd -> n_expert
  SharedExpertWeights shared;  // n_ff_shared > 0
};

struct ModelWeights {
  Matrix token_embedding;  // n_vocab rows of n_embd
  Vector output_norm;
  Matrix output;  // n_embd -> n_vocab (token_embedding itself when tied)
  std::vector<LayerWeights> layers;
  ExpertLayout experts;  // routed experts, reached only through the ExpertStore
};

}  // namespace strata
