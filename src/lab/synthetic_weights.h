// The weights of a synthetic MoE model: random, but built so that routing behaves like a
// trained model's (the design is in synthetic_weights.cpp's header comment).
//
// Every row is a pure function of (seed, tensor name, row index), so files do not depend on
// thread count or write order.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lab/synthetic_presets.h"
#include "quant/quant_type.h"

namespace strata {

enum class SyntheticTensorKind {
  kNorm,
  kEmbedding,
  kOutput,
  kAttnQ,
  kAttnK,
  kAttnV,
  kAttnOutput,
  kQNorm,
  kKNorm,
  kQBias,
  kKBias,
  kVBias,
  kRouter,
  kExpertGateUp,
  kExpertDown,
  kSharedGateInput,
};

struct SyntheticTensor {
  std::string name;
  SyntheticTensorKind kind;
  int64_t layer = -1;
  std::vector<int64_t> shape;  // ggml order: row length first
  QuantType type;
  int64_t n_rows() const;  // product of shape[1..]
};

// The two gains of one layer's router: on the slow context dimensions and on the
// token-specific ones. Their ratio sets how many experts repeat from token to token.
struct RouterGains {
  float context = 1.0f;
  float token = 1.0f;
};

class SyntheticWeights {
 public:
  SyntheticWeights(const SyntheticShape& shape, uint64_t seed);

  // Router gains of a layer (default 1, 1); router_calibration.h chooses them.
  void set_router_gains(int64_t layer, RouterGains gains) { router_gains_[size_t(layer)] = gains; }
  const SyntheticShape& shape() const { return shape_; }

  // The tensors of the model in file order, 2-D weights in `type` but the routed experts in
  // `expert_type` (routers and 1-D weights in F32).
  std::vector<SyntheticTensor> tensors(QuantType type, QuantType expert_type) const;
  std::vector<SyntheticTensor> tensors(QuantType type) const { return tensors(type, type); }

  // Fills one row (shape[0] floats) of a tensor.
  void fill_row(const SyntheticTensor& tensor, int64_t row, float* out) const;
  // Writes one row of an expert tensor directly as Q4_0, Q4_K or Q2_0 blocks with the same
  // statistics as fill_row's, without a float detour (the quantizers are the bottleneck of a
  // 17 GB model otherwise). REQUIRES: has_direct_blocks(tensor).
  static bool has_direct_blocks(const SyntheticTensor& tensor);
  void fill_row_blocks(const SyntheticTensor& tensor, int64_t row, uint8_t* out) const;

  int64_t context_dims() const { return n_context_; }

 private:
  struct RowPlan;  // which columns a row reads and at what scale
  RowPlan plan_row(const SyntheticTensor& tensor, int64_t row) const;
  uint64_t row_seed(const SyntheticTensor& tensor, int64_t row) const;

  SyntheticShape shape_;
  uint64_t seed_;
  std::vector<RouterGains> router_gains_;
  bool anchor_;  // qwen3moe: dimension 0 is a constant that only the context heads read
  int64_t first_context_, n_context_, first_token_dim_, first_mixed_dim_;
  std::vector<std::vector<float>>
      group_query_;  // [n_head_kv][head_dim]: constant q = k per KV group
  float qk_norm_gain_;
};

}  // namespace strata
