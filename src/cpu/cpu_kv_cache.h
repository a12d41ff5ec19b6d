// The CPU backend's KV cache: F32 keys and values for every layer, n_ctx positions rounded up to
// whole key tiles (attention.h has the layout).
#pragma once

#include <cstdint>
#include <vector>

#include "backend/kv_cache.h"
#include "backend/model_shape.h"
#include "cpu/attention.h"

namespace strata {

class CpuKvCache final : public KvCache {
 public:
  CpuKvCache(const ModelShape& shape, int64_t n_ctx);

  int64_t n_ctx() const override { return n_ctx_; }
  LayerKvView layer(int64_t index);
  static uint64_t bytes_for(const ModelShape& shape, int64_t n_ctx);
  // Keys and values of every layer for one position: what attention reads per position.
  static uint64_t bytes_per_position(const ModelShape& shape);

 private:
  int64_t n_ctx_;
  int64_t n_head_kv_;
  int64_t head_dim_;
  int64_t layer_floats_;  // keys or values of one layer
  std::vector<float> keys_, values_;
};

}  // namespace strata
