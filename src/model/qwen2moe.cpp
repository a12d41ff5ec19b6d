// qwen2moe (Qwen1.5-MoE-A2.7B, Qwen2-57B-A14B): q/k/v biases, no q/k norms, softmax router
// WITHOUT renormalisation of the top-k weights, and a shared expert that every token uses,
// scaled by sigmoid(ffn_gate_inp_shexp · x).
#include "model/architecture.h"

namespace strata {

Result<BoundModel> bind_qwen2moe(const TensorBinder& binder) {
  BoundModel model;
  ModelConfig& config = model.config;
  config.arch = "qwen2moe";
  config.has_qkv_bias = true;
  config.shared_expert_gated = true;
  STRATA_RETURN_IF_ERROR(read_common_config(binder, config));
  STRATA_ASSIGN_OR_RETURN(config.n_ff_shared, binder.count("expert_shared_feed_forward_length"));

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
    auto name = [&](std::string_view suffix) { return layer_tensor(layer, suffix); };
    STRATA_ASSIGN_OR_RETURN(l.shared.gate_input,
                            binder.vector(name("ffn_gate_inp_shexp.weight"), config.n_embd));
    STRATA_ASSIGN_OR_RETURN(l.shared.gate, binder.matrix(name("ffn_gate_shexp.weight"),
                                                         config.n_embd, config.n_ff_shared));
    STRATA_ASSIGN_OR_RETURN(
        l.shared.up, binder.matrix(name("ffn_up_shexp.weight"), config.n_embd, config.n_ff_shared));
    STRATA_ASSIGN_OR_RETURN(l.shared.down, binder.matrix(name("ffn_down_shexp.weight"),
                                                         config.n_ff_shared, config.n_embd));
  }
  return model;
}

}  // namespace strata
