// The resident (dense) weights of a MoE transformer, bound to the model file by the
// architecture's loader. Matrices point into the file mapping; 1-D weights (norms, biases) are
// converted to float at load.
#pragma once

#include <vector>

#include "cpu/matmul.h"
#include "experts/expert_layout.h"

namespace strata {

using Vector = std::vector<float>;  // empty when the architecture has no such weight

struct LayerWeights {
  Vector attn_norm;               // [n_embd]
  Matrix q, k, v, o;              // q: n_embd -> n_head*head_dim, k/v: -> n_head_kv*head_dim
  Vector q_bias, k_bias, v_bias;  // has_qkv_bias
  Vector q_norm, k_norm;          // [head_dim], has_qk_norm
  Vector ffn_norm;                // [n_embd]
  Matrix router;                  // n_embd -> n_expert
  Matrix shared_gate, shared_up, shared_down;  // n_ff_shared > 0
  Vector shared_gate_input;                    // [n_embd], shared_expert_gated
};

struct ModelWeights {
  Matrix token_embedding;  // n_vocab rows of n_embd
  Vector output_norm;
  Matrix output;  // n_embd -> n_vocab (token_embedding itself when tied)
  std::vector<LayerWeights> layers;
  ExpertLayout experts;  // routed experts, reached only through the ExpertStore
};

}  // namespace strata
