#include "cuda/cuda_kv_cache.h"

#include <atomic>

#include <cuda_runtime.h>

#include <cmath>
#include <vector>

namespace strata::cuda {

uint64_t CudaKvCache::bytes_per_position(const ModelShape& shape) {
  const uint64_t kv = 2 * uint64_t(shape.n_layer) * uint64_t(shape.n_head_kv * shape.head_dim);
  return (kv + uint64_t(shape.head_dim)) * sizeof(float);  // + cos and sin of head_dim / 2
}

uint64_t CudaKvCache::bytes_for(const ModelShape& shape, int64_t n_ctx) {
  return bytes_per_position(shape) * uint64_t(n_ctx);
}

Result<std::unique_ptr<CudaKvCache>> CudaKvCache::create(const ModelShape& shape, int64_t n_ctx) {
  static std::atomic<uint64_t> made{0};
  auto cache = std::unique_ptr<CudaKvCache>(new CudaKvCache());
  cache->id_ = ++made;
  cache->n_ctx_ = n_ctx;
  cache->half_dim_ = shape.head_dim / 2;
  cache->layer_floats_ = shape.n_head_kv * shape.head_dim * n_ctx;
  const size_t kv_bytes = size_t(cache->layer_floats_ * shape.n_layer) * sizeof(float);
  STRATA_ASSIGN_OR_RETURN(cache->keys_, DeviceBuffer::allocate(kv_bytes, "the KV cache"));
  STRATA_ASSIGN_OR_RETURN(cache->values_, DeviceBuffer::allocate(kv_bytes, "the KV cache"));

  // cos then sin, [n_ctx][half] each: the angles of cpu/rope.cpp, in the same float operations.
  const int64_t half = cache->half_dim_;
  std::vector<float> angles(size_t(2 * n_ctx * half));
  const float theta_scale = std::pow(shape.rope_freq_base, -2.0f / float(shape.head_dim));
  for (int64_t pos = 0; pos < n_ctx; ++pos) {
    float theta = float(pos);
    for (int64_t i = 0; i < half; ++i) {
      angles[size_t(pos * half + i)] = std::cos(theta);
      angles[size_t((n_ctx + pos) * half + i)] = std::sin(theta);
      theta *= theta_scale;
    }
  }
  STRATA_ASSIGN_OR_RETURN(cache->rope_,
                          DeviceBuffer::allocate(angles.size() * sizeof(float), "the RoPE angles"));
  STRATA_RETURN_IF_ERROR(
      cuda_status(cudaMemcpy(cache->rope_.data(), angles.data(), angles.size() * sizeof(float),
                             cudaMemcpyHostToDevice),
                  "copying the RoPE angles to the device"));
  return cache;
}

LayerCache CudaKvCache::layer(int64_t index) const {
  return LayerCache{keys_.as<float>() + index * layer_floats_,
                    values_.as<float>() + index * layer_floats_, n_ctx_};
}

}  // namespace strata::cuda
