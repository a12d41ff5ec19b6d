// The three steps of attention for up to kMaxHeadsTogether query heads of one KV head, in a
// scalar, an AVX2 and an AVX-512 version (selected in attention.cpp). Score rows are
// `score_stride` apart and padded to whole key tiles; queries and outputs are head_dim apart.
#pragma once

#include <cstdint>

namespace strata {

inline constexpr int kMaxHeadsTogether = 4;

struct AttentionKernels {
  // scores[h][j] = scale * q[h]·k_j for j < n_pos, computed over whole tiles.
  void (*key_scores)(const float* q, int n_heads, const float* key_tiles, int64_t head_dim,
                     int64_t n_pos, float scale, float* scores, int64_t score_stride);
  // scores[h][0..n_pos) = softmax(scores[h][0..n_pos)), the sum accumulated in double; the rest
  // of the last tile is set to zero.
  void (*softmax_rows)(float* scores, int n_heads, int64_t n_pos, int64_t score_stride);
  // out[h][d] = sum_{j < n_pos} p[h][j] * values_t[d][j]
  void (*weighted_values)(const float* p, int n_heads, int64_t p_stride, const float* values_t,
                          int64_t capacity, int64_t head_dim, int64_t n_pos, float* out);
};

const AttentionKernels& attention_kernels_scalar();
const AttentionKernels& attention_kernels_avx2();
// The AVX2 kernels' results to the bit. REQUIRES: avx512_vnni().
const AttentionKernels& attention_kernels_avx512();

}  // namespace strata
