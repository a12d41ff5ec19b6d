// Causal multi-head attention with grouped KV heads over an F32 KV cache, for a chunk of
// consecutive tokens (prefill) or one token (decode).
#pragma once

#include <cstdint>
#include <vector>

#include "cpu/thread_pool.h"

namespace strata {

// One layer's cache. Keys are [n_head_kv][n_ctx][head_dim]; values are stored transposed,
// [n_head_kv][head_dim][n_ctx], so that both attention products are dot products over
// contiguous memory (as llama.cpp lays out its non-flash V cache).
struct LayerKvView {
  float* keys = nullptr;
  float* values_t = nullptr;
  int64_t n_ctx = 0;
  int64_t n_head_kv = 0;
  int64_t head_dim = 0;

  // Writes the key and value vectors (n_head_kv x head_dim each) of the token at `pos`.
  void store(int64_t pos, const float* k, const float* v) const;
};

struct AttentionShape {
  int64_t n_head = 0;
  int64_t n_head_kv = 0;
  int64_t head_dim = 0;
  float scale = 0;  // usually 1/sqrt(head_dim)
};

// Per-thread score buffers, grown on demand.
struct AttentionScratch {
  std::vector<std::vector<float>> scores;
};

// out[t][h][:] = sum_j softmax_j(scale * q[t][h]·k_j) v_j over positions j <= pos0 + t, where
// q and out are [n_tokens][n_head][head_dim]. REQUIRES: the cache holds positions
// [0, pos0 + n_tokens).
void attention(ThreadPool& pool, const AttentionShape& shape, const LayerKvView& kv, const float* q,
               int64_t n_tokens, int64_t pos0, float* out, AttentionScratch& scratch);

}  // namespace strata
