// qwen3moe (Qwen3-30B-A3B, Qwen3-235B-A22B): per-head RMSNorm of q and k before RoPE, no
// biases, softmax router whose top-k weights are renormalised to sum to 1 (llama.cpp hard-codes
// norm_topk_prob for this architecture), no shared expert.
#include "model/architecture.h"

namespace strata {

Result<BoundModel> bind_qwen3moe(const TensorBinder& binder) {
  BoundModel model;
  ModelConfig& config = model.config;
  config.arch = "qwen3moe";
  config.renormalize_top_k = true;
  config.has_qk_norm = true;
  STRATA_RETURN_IF_ERROR(read_common_config(binder, config));

  ModelWeights& weights = model.weights;
  STRATA_RETURN_IF_ERROR(bind_embeddings(binder, config, weights));
  weights.layers.resize(size_t(config.n_layer));
  weights.experts.n_expert = int(config.n_expert);
  weights.experts.layers.resize(size_t(config.n_layer));
  for (int64_t layer = 0; layer < config.n_layer; ++layer) {
    LayerWeights& l = weights.layers[size_t(layer)];
    STRATA_RETURN_IF_ERROR(bind_attention(binder, config, layer, l.attention));
    STRATA_RETURN_IF_ERROR(
        bind_routed_experts(binder, config, layer, l, weights.experts.layers[size_t(layer)]));
  }
  return model;
}

}  // namespace strata
