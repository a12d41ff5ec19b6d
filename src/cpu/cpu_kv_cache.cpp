#include "cpu/cpu_kv_cache.h"

namespace strata {

CpuKvCache::CpuKvCache(const ModelShape& shape, int64_t n_ctx)
    : n_ctx_(n_ctx),
      n_head_kv_(shape.n_head_kv),
      head_dim_(shape.head_dim),
      layer_floats_(shape.n_head_kv * shape.head_dim * LayerKvView::capacity_for(n_ctx)),
      keys_(size_t(layer_floats_ * shape.n_layer)),
      values_(size_t(layer_floats_ * shape.n_layer)) {}

LayerKvView CpuKvCache::layer(int64_t index) {
  return LayerKvView{keys_.data() + index * layer_floats_,
                     values_.data() + index * layer_floats_,
                     n_ctx_,
                     LayerKvView::capacity_for(n_ctx_),
                     n_head_kv_,
                     head_dim_};
}

uint64_t CpuKvCache::bytes_for(const ModelShape& shape, int64_t n_ctx) {
  return bytes_per_position(shape) * uint64_t(LayerKvView::capacity_for(n_ctx));
}

uint64_t CpuKvCache::bytes_per_position(const ModelShape& shape) {
  return 2 * uint64_t(shape.n_layer) * uint64_t(shape.n_head_kv * shape.head_dim) * sizeof(float);
}

}  // namespace strata
