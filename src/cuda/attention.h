// Attention on the GPU over a KV cache in device memory (cuda_kv_cache.h), with the arithmetic of
// the CPU's (cpu/attention.h, cpu_attention_block.cpp): per-head RMSNorm of q and k, NEOX RoPE
// by a table of the CPU's angles, then softmax(scale q·k) v with the sum in double.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace strata::cuda {

// One layer's cache: keys dimension-major, so that a block's threads read consecutive positions
// of one dimension, values position-major, so that they read consecutive dimensions:
//   keys   [n_head_kv][head_dim][capacity]
//   values [n_head_kv][capacity][head_dim]
struct LayerCache {
  float* keys = nullptr;
  float* values = nullptr;
  int64_t capacity = 0;
};

struct AttentionShape {
  int64_t n_head = 0;
  int64_t n_head_kv = 0;
  int64_t head_dim = 0;
  float scale = 0;  // 1 / sqrt(head_dim)
  float rms_eps = 0;
};

// The largest head the kernels take: a block's threads hold one rotated pair each.
inline constexpr int64_t kMaxHeadDim = 256;

// For n_tokens tokens at positions pos0..: q [t][n_head][head_dim] and k [t][n_head_kv][head_dim]
// normed per head (when q_norm / k_norm are given) and rotated by rope (cos and sin per position,
// [capacity][head_dim / 2] each), in place; k and v [t][n_head_kv][head_dim] then stored in the
// cache at their positions.
struct AttentionInputs {
  float* q = nullptr;
  float* k = nullptr;
  const float* v = nullptr;
  const float* q_norm = nullptr;
  const float* k_norm = nullptr;
  const float* rope_cos = nullptr;
  const float* rope_sin = nullptr;
};
// pos0 is in device memory, so that a recorded decode step (a CUDA graph) runs at any position.
cudaError_t launch_prepare_attention(const AttentionShape& shape, const AttentionInputs& inputs,
                                     int64_t n_tokens, const int64_t* pos0, const LayerCache& cache,
                                     cudaStream_t stream);

// out[t][h][:] = sum_j softmax_j(scale q[t][h]·k_j) v_j over positions j <= *pos0 + t.
// Shared memory holds a block's scores, for positions_bound >= *pos0 + n_tokens positions: at most
// attention_shared_bytes(capacity).
cudaError_t launch_attention(const AttentionShape& shape, const float* q, int64_t n_tokens,
                             const int64_t* pos0, int64_t positions_bound, const LayerCache& cache,
                             float* out, cudaStream_t stream);
size_t attention_shared_bytes(int64_t capacity, int64_t head_dim);
// Lets the attention kernel use that much shared memory (above the default 48 KB).
cudaError_t allow_attention_shared_bytes(size_t bytes);

}  // namespace strata::cuda
