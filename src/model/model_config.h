// Hyper-parameters of a MoE transformer, read from GGUF metadata by the architecture's file.
#pragma once

#include <cstdint>
#include <string>

namespace strata {

struct ModelConfig {
  std::string arch;  // GGUF general.architecture, e.g. "qwen3moe"
  int64_t n_layer = 0;
  int64_t n_embd = 0;
  int64_t n_head = 0;
  int64_t n_head_kv = 0;
  int64_t head_dim = 0;  // key_length == value_length
  int64_t n_vocab = 0;
  int64_t n_ctx_train = 0;
  int64_t n_expert = 0;
  int64_t n_expert_used = 0;
  int64_t n_ff_expert = 0;  // rows of one routed expert's gate/up
  int64_t n_ff_shared = 0;  // 0: no shared expert
  float rope_freq_base = 10000.0f;
  float rms_eps = 1e-6f;

  bool renormalize_top_k = false;  // rescale the chosen experts' weights to sum to 1
  bool has_qk_norm = false;        // per-head RMSNorm of q and k before RoPE
  bool has_qkv_bias = false;
  bool shared_expert_gated = false;  // shared expert output scaled by sigmoid(w · x)
};

}  // namespace strata
