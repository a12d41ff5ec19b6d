#include "model/kv_cache.h"

namespace strata {

KvCache::KvCache(const ModelConfig& config, int64_t n_ctx)
    : n_ctx_(n_ctx),
      n_head_kv_(config.n_head_kv),
      head_dim_(config.head_dim),
      layer_floats_(config.n_head_kv * config.head_dim * LayerKvView::capacity_for(n_ctx)),
      keys_(size_t(layer_floats_ * config.n_layer)),
      values_(size_t(layer_floats_ * config.n_layer)) {}

LayerKvView KvCache::layer(int64_t index) {
  return LayerKvView{keys_.data() + index * layer_floats_,
                     values_.data() + index * layer_floats_,
                     n_ctx_,
                     LayerKvView::capacity_for(n_ctx_),
                     n_head_kv_,
                     head_dim_};
}

uint64_t KvCache::bytes_for(const ModelConfig& config, int64_t n_ctx) {
  return bytes_per_position(config) * uint64_t(LayerKvView::capacity_for(n_ctx));
}

uint64_t KvCache::bytes_per_position(const ModelConfig& config) {
  return 2 * uint64_t(config.n_layer) * uint64_t(config.n_head_kv * config.head_dim) *
         sizeof(float);
}

}  // namespace strata
