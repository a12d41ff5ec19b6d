// Hyper-parameters of a MoE transformer, read from GGUF metadata by the architecture's file:
// the shape the backend's ops need and what only the model layer uses.
#pragma once

#include <cstdint>
#include <string>

#include "backend/model_shape.h"

namespace strata {

struct ModelConfig : ModelShape {
  std::string arch;  // GGUF general.architecture, e.g. "qwen3moe"
  int64_t n_ctx_train = 0;

  bool renormalize_top_k = false;  // rescale the chosen experts' weights to sum to 1
  bool has_qk_norm = false;        // per-head RMSNorm of q and k before RoPE
  bool has_qkv_bias = false;
  bool shared_expert_gated = false;  // shared expert output scaled by sigmoid(w · x)
};

}  // namespace strata
