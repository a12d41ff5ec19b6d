// The weights of one layer's ops, bound by the architecture's file (model/) and computed with by
// a backend. Empty vectors and matrices without data are weights the architecture lacks.
#pragma once

#include "backend/tensors.h"

namespace strata {

// The attention sublayer: h += o · attention(rope(norm_qk(q, k)), v) of x = rms_norm(h).
struct AttentionWeights {
  Vector norm;                    // [n_embd]
  Matrix q, k, v, o;              // q: n_embd -> n_head*head_dim, k/v: -> n_head_kv*head_dim
  Vector q_bias, k_bias, v_bias;  // qwen2moe
  Vector q_norm, k_norm;          // [head_dim], per-head RMSNorm (qwen3moe)
};

// An expert every token uses (qwen2moe): down(silu(gate·x) ⊙ up·x), scaled by
// sigmoid(gate_input · x) when gate_input is not empty.
struct SharedExpertWeights {
  Matrix gate, up, down;
  Vector gate_input;  // [n_embd]
};

// One routed expert's matrices, where every expert of a layer is resident.
struct ExpertMatrices {
  Matrix gate, up, down;
};

}  // namespace strata
