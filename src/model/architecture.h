// The architecture registry: one entry per supported GGUF `general.architecture`, each
// defined in its own file (qwen3moe.cpp, qwen2moe.cpp). An entry reads the hyper-parameters
// and binds every tensor, checking shapes; the forward pass (transformer.h) is shared and
// configured by ModelConfig's flags.
#pragma once

#include <strata/status.h>

#include <span>
#include <string_view>

#include "model/model_config.h"
#include "model/tensor_binder.h"
#include "model/weights.h"

namespace strata {

struct BoundModel {
  ModelConfig config;
  ModelWeights weights;
};

struct Architecture {
  std::string_view name;
  Result<BoundModel> (*bind)(const TensorBinder& binder);
};

std::span<const Architecture> architectures();

// Building blocks shared by the MoE architectures (moe_common.cpp).
// Reads the hyper-parameters every MoE transformer has into `config`.
Status read_common_config(const TensorBinder& binder, ModelConfig& config);
// Token embedding, output norm and output (tied to the embedding when output.weight is absent).
Status bind_embeddings(const TensorBinder& binder, const ModelConfig& config,
                       ModelWeights& weights);
// Norms and q/k/v/o projections of one layer (biases or q/k norms as the config says).
Status bind_attention(const TensorBinder& binder, const ModelConfig& config, int64_t layer,
                      AttentionWeights& weights);
// ffn_norm, router and the three stacked expert tensors of one layer.
Status bind_routed_experts(const TensorBinder& binder, const ModelConfig& config, int64_t layer,
                           LayerWeights& weights, LayerExpertLayout& experts);

}  // namespace strata
