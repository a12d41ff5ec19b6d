#include <fmt/format.h>

#include "model/architecture.h"

namespace strata {

Status read_common_config(const TensorBinder& binder, ModelConfig& config) {
  // The vocabulary size is the embedding's row count; the tokenizer is checked against it.
  const gguf::TensorInfo* embedding = binder.file().find_tensor("token_embd.weight");
  if (!embedding || embedding->shape.size() != 2)
    return Status::errorf("{}: missing 2-D tensor token_embd.weight", binder.file().name());
  config.n_vocab = embedding->shape[1];
  STRATA_ASSIGN_OR_RETURN(config.n_layer, binder.count("block_count"));
  STRATA_ASSIGN_OR_RETURN(config.n_embd, binder.count("embedding_length"));
  STRATA_ASSIGN_OR_RETURN(config.n_head, binder.count("attention.head_count"));
  STRATA_ASSIGN_OR_RETURN(config.n_head_kv,
                          binder.count_or("attention.head_count_kv", config.n_head));
  STRATA_ASSIGN_OR_RETURN(config.head_dim,
                          binder.count_or("attention.key_length", config.n_embd / config.n_head));
  STRATA_ASSIGN_OR_RETURN(const int64_t value_dim,
                          binder.count_or("attention.value_length", config.head_dim));
  STRATA_ASSIGN_OR_RETURN(config.n_ctx_train, binder.count_or("context_length", 4096));
  STRATA_ASSIGN_OR_RETURN(config.n_expert, binder.count("expert_count"));
  STRATA_ASSIGN_OR_RETURN(config.n_expert_used, binder.count("expert_used_count"));
  STRATA_ASSIGN_OR_RETURN(config.n_ff_expert, binder.count("expert_feed_forward_length"));
  STRATA_ASSIGN_OR_RETURN(config.rope_freq_base, binder.real_or("rope.freq_base", 10000.0f));
  STRATA_ASSIGN_OR_RETURN(config.rms_eps,
                          binder.real_or("attention.layer_norm_rms_epsilon", 1e-6f));

  auto invalid = [&](std::string what) {
    return Status::errorf("{}: {}", binder.file().name(), what);
  };
  if (value_dim != config.head_dim)
    return invalid(fmt::format("attention.value_length {} differs from key_length {}", value_dim,
                               config.head_dim));
  if (config.n_head % config.n_head_kv != 0)
    return invalid(fmt::format("head_count {} is not a multiple of head_count_kv {}", config.n_head,
                               config.n_head_kv));
  if (config.head_dim % 2 != 0 || config.head_dim > 1024)
    return invalid(fmt::format("key_length {} must be even and at most 1024", config.head_dim));
  if (config.n_expert_used > config.n_expert)
    return invalid(fmt::format("expert_used_count {} exceeds expert_count {}", config.n_expert_used,
                               config.n_expert));
  if (!(config.rope_freq_base > 0) || !(config.rms_eps > 0))
    return invalid("rope.freq_base and layer_norm_rms_epsilon must be positive");
  const std::string scaling = fmt::format("{}.rope.scaling.type", config.arch);
  if (binder.file().has(scaling)) {
    STRATA_ASSIGN_OR_RETURN(const std::string type, binder.file().get_string(scaling));
    if (type != "none") return invalid(fmt::format("RoPE scaling '{}' is not supported", type));
  }
  return Status();
}

Status bind_embeddings(const TensorBinder& binder, const ModelConfig& config,
                       ModelWeights& weights) {
  STRATA_ASSIGN_OR_RETURN(weights.token_embedding,
                          binder.matrix("token_embd.weight", config.n_embd, config.n_vocab));
  STRATA_ASSIGN_OR_RETURN(weights.output_norm, binder.vector("output_norm.weight", config.n_embd));
  if (binder.has_tensor("output.weight")) {
    STRATA_ASSIGN_OR_RETURN(weights.output,
                            binder.matrix("output.weight", config.n_embd, config.n_vocab));
  } else {
    weights.output = weights.token_embedding;
  }
  return Status();
}

Status bind_attention(const TensorBinder& binder, const ModelConfig& config, int64_t layer,
                      AttentionWeights& weights) {
  const int64_t q_dim = config.n_head * config.head_dim;
  const int64_t kv_dim = config.n_head_kv * config.head_dim;
  auto name = [&](std::string_view suffix) { return layer_tensor(layer, suffix); };
  STRATA_ASSIGN_OR_RETURN(weights.norm, binder.vector(name("attn_norm.weight"), config.n_embd));
  STRATA_ASSIGN_OR_RETURN(weights.q, binder.matrix(name("attn_q.weight"), config.n_embd, q_dim));
  STRATA_ASSIGN_OR_RETURN(weights.k, binder.matrix(name("attn_k.weight"), config.n_embd, kv_dim));
  STRATA_ASSIGN_OR_RETURN(weights.v, binder.matrix(name("attn_v.weight"), config.n_embd, kv_dim));
  STRATA_ASSIGN_OR_RETURN(weights.o,
                          binder.matrix(name("attn_output.weight"), q_dim, config.n_embd));
  if (config.has_qkv_bias) {
    STRATA_ASSIGN_OR_RETURN(weights.q_bias, binder.vector(name("attn_q.bias"), q_dim));
    STRATA_ASSIGN_OR_RETURN(weights.k_bias, binder.vector(name("attn_k.bias"), kv_dim));
    STRATA_ASSIGN_OR_RETURN(weights.v_bias, binder.vector(name("attn_v.bias"), kv_dim));
  }
  if (config.has_qk_norm) {
    STRATA_ASSIGN_OR_RETURN(weights.q_norm,
                            binder.vector(name("attn_q_norm.weight"), config.head_dim));
    STRATA_ASSIGN_OR_RETURN(weights.k_norm,
                            binder.vector(name("attn_k_norm.weight"), config.head_dim));
  }
  return Status();
}

Status bind_routed_experts(const TensorBinder& binder, const ModelConfig& config, int64_t layer,
                           LayerWeights& weights, LayerExpertLayout& experts) {
  auto name = [&](std::string_view suffix) { return layer_tensor(layer, suffix); };
  STRATA_ASSIGN_OR_RETURN(weights.ffn_norm, binder.vector(name("ffn_norm.weight"), config.n_embd));
  STRATA_ASSIGN_OR_RETURN(
      weights.router, binder.matrix(name("ffn_gate_inp.weight"), config.n_embd, config.n_expert));
  STRATA_ASSIGN_OR_RETURN(experts.gate, binder.experts(layer, "ffn_gate", config.n_embd,
                                                       config.n_ff_expert, config.n_expert));
  STRATA_ASSIGN_OR_RETURN(experts.up, binder.experts(layer, "ffn_up", config.n_embd,
                                                     config.n_ff_expert, config.n_expert));
  STRATA_ASSIGN_OR_RETURN(experts.down, binder.experts(layer, "ffn_down", config.n_ff_expert,
                                                       config.n_embd, config.n_expert));
  return Status();
}

}  // namespace strata
