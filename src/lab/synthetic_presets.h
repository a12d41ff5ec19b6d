// Shapes of the synthetic models `strata make-model` writes.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace strata {

struct SyntheticShape {
  std::string_view arch;
  std::string_view preset;
  std::string_view like;  // the real model whose shape this is, if any
  int64_t n_layer, n_embd, n_head, n_head_kv, head_dim;
  int64_t n_expert, n_expert_used, n_ff_expert, n_ff_shared;
  int64_t n_vocab, n_ctx_train;
  float rope_freq_base;
};

std::span<const SyntheticShape> synthetic_shapes();

}  // namespace strata
