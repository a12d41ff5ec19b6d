// The CUDA backend's KV cache: F32 keys and values of every layer in device memory, laid out as
// attention.h's LayerCache says, and the RoPE angles of every position it holds, computed on the
// host as the CPU computes them (cpu/rope.cpp: repeated float multiplication of the angle).
#pragma once

#include <strata/status.h>

#include <cstdint>
#include <memory>

#include "backend/kv_cache.h"
#include "backend/model_shape.h"
#include "cuda/attention.h"
#include "cuda/cuda_memory.h"

namespace strata::cuda {

class CudaKvCache final : public KvCache {
 public:
  static Result<std::unique_ptr<CudaKvCache>> create(const ModelShape& shape, int64_t n_ctx);

  int64_t n_ctx() const override { return n_ctx_; }
  LayerCache layer(int64_t index) const;
  // Distinct for every cache made in the process (an address may be reused): what a recorded
  // decode step is recorded for.
  uint64_t id() const { return id_; }
  // [n_ctx][head_dim / 2] each
  const float* rope_cos() const { return rope_.as<const float>(); }
  const float* rope_sin() const { return rope_.as<const float>() + n_ctx_ * half_dim_; }

  static uint64_t bytes_for(const ModelShape& shape, int64_t n_ctx);
  // Keys and values of every layer for one position, and its angles.
  static uint64_t bytes_per_position(const ModelShape& shape);

 private:
  CudaKvCache() = default;

  uint64_t id_ = 0;
  int64_t n_ctx_ = 0;
  int64_t half_dim_ = 0;
  int64_t layer_floats_ = 0;  // keys (or values) of one layer
  DeviceBuffer keys_, values_, rope_;
};

}  // namespace strata::cuda
