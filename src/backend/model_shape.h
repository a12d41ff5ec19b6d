// The hyper-parameters the layer ops need, read from the model file by the architecture's
// binder (model/model_config.h extends them with what only the model layer uses).
#pragma once

#include <cstdint>

namespace strata {

struct ModelShape {
  int64_t n_layer = 0;
  int64_t n_embd = 0;
  int64_t n_head = 0;
  int64_t n_head_kv = 0;
  int64_t head_dim = 0;  // key_length == value_length
  int64_t n_vocab = 0;
  int64_t n_expert = 0;
  int64_t n_expert_used = 0;
  int64_t n_ff_expert = 0;  // rows of one routed expert's gate/up
  int64_t n_ff_shared = 0;  // 0: no shared expert
  float rope_freq_base = 10000.0f;
  float rms_eps = 1e-6f;
};

}  // namespace strata
