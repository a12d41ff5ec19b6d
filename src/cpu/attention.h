// Causal multi-head attention with grouped KV heads over an F32 KV cache, for a chunk of
// consecutive tokens (prefill) or one token (decode).
#pragma once

#include <cstdint>
#include <vector>

#include "cpu/thread_pool.h"

namespace strata {

// Positions per key tile: one AVX-512 register of scores (AVX2 kernels take a tile in halves).
inline constexpr int64_t kKeyTile = 16;

// One layer's cache, laid out so that both attention products stream contiguous memory and
// need no horizontal sum per position:
//   keys     [n_head_kv][capacity / kKeyTile][head_dim][kKeyTile]: a tile holds kKeyTile
//            positions, dimension-major, so one load gives one dimension of a tile's keys;
//   values_t [n_head_kv][head_dim][capacity]: transposed, each output dimension a dot product
//            over positions (as llama.cpp lays out its non-flash V cache).
// capacity is n_ctx rounded up to whole tiles.
struct LayerKvView {
  float* keys = nullptr;
  float* values_t = nullptr;
  int64_t n_ctx = 0;
  int64_t capacity = 0;
  int64_t n_head_kv = 0;
  int64_t head_dim = 0;

  static int64_t capacity_for(int64_t n_ctx) {
    return (n_ctx + kKeyTile - 1) / kKeyTile * kKeyTile;
  }
  // Writes the key and value vectors (n_head_kv x head_dim each) of the token at `pos`.
  void store(int64_t pos, const float* k, const float* v) const;
  // The same for one KV head: k and v are that head's head_dim values.
  void store_head(int64_t pos, int64_t kv_head, const float* k, const float* v) const;
  // Half of store_head: one head's key, or its value. Each writes one float to each of head_dim
  // cache lines.
  void store_head_key(int64_t pos, int64_t kv_head, const float* k) const;
  void store_head_value(int64_t pos, int64_t kv_head, const float* v) const;
};

struct AttentionShape {
  int64_t n_head = 0;
  int64_t n_head_kv = 0;
  int64_t head_dim = 0;
  float scale = 0;  // usually 1/sqrt(head_dim)
};

// Per-thread score rows, grown on demand.
struct AttentionScratch {
  std::vector<std::vector<float>> scores;
  static uint64_t floats_for(int64_t n_ctx, int n_threads);
  // Rows for n_threads threads over a cache of `capacity` positions.
  void prepare(int n_threads, int64_t capacity);
};

// out[t][h][:] = sum_j softmax_j(scale * q[t][h]·k_j) v_j over positions j <= pos0 + t, where
// q and out are [n_tokens][n_head][head_dim]. The query heads that share a KV head are computed
// together, so each key and value is read once per group. REQUIRES: the cache holds positions
// [0, pos0 + n_tokens).
void attention(ThreadPool& pool, const AttentionShape& shape, const LayerKvView& kv, const float* q,
               int64_t n_tokens, int64_t pos0, float* out, AttentionScratch& scratch);

// The query heads of KV head `kv_head` for one token at position `pos`, on the calling thread,
// for work that is already one task of a parallel_for: q and out are the token's
// [n_head][head_dim] rows, `scores` one thread's rows of a prepared AttentionScratch. Bit for
// bit what attention() computes for those heads.
void attention_heads_here(const AttentionShape& shape, const LayerKvView& kv, const float* q,
                          int64_t pos, int64_t kv_head, float* out, float* scores);

}  // namespace strata
