#include "cpu/attention.h"

#include <algorithm>

#include "base/check.h"
#include "base/cpu_features.h"
#include "cpu/attention_kernels.h"
#include "cpu/elementwise.h"

namespace strata {
namespace {

void key_scores_scalar(const float* q, int n_heads, const float* key_tiles, int64_t head_dim,
                       int64_t n_pos, float scale, float* scores, int64_t score_stride) {
  const int64_t n_tiles = (n_pos + kKeyTile - 1) / kKeyTile;
  for (int h = 0; h < n_heads; ++h)
    for (int64_t tile = 0; tile < n_tiles; ++tile) {
      const float* keys = key_tiles + tile * head_dim * kKeyTile;
      float sums[kKeyTile] = {};
      for (int64_t d = 0; d < head_dim; ++d)
        for (int64_t lane = 0; lane < kKeyTile; ++lane)
          sums[lane] += q[h * head_dim + d] * keys[d * kKeyTile + lane];
      for (int64_t lane = 0; lane < kKeyTile; ++lane)
        scores[h * score_stride + tile * kKeyTile + lane] = sums[lane] * scale;
    }
}

void softmax_rows_scalar(float* scores, int n_heads, int64_t n_pos, int64_t score_stride) {
  for (int h = 0; h < n_heads; ++h) {
    float* x = scores + h * score_stride;
    softmax(x, n_pos);
    std::fill(x + n_pos, x + LayerKvView::capacity_for(n_pos), 0.0f);
  }
}

void weighted_values_scalar(const float* p, int n_heads, int64_t p_stride, const float* values_t,
                            int64_t capacity, int64_t head_dim, int64_t n_pos, float* out) {
  for (int h = 0; h < n_heads; ++h)
    for (int64_t d = 0; d < head_dim; ++d) {
      const float* row = values_t + d * capacity;
      float sum = 0;
      for (int64_t j = 0; j < n_pos; ++j) sum += p[h * p_stride + j] * row[j];
      out[h * head_dim + d] = sum;
    }
}

const AttentionKernels& selected_kernels() {
  static const AttentionKernels& kernels = []() -> const AttentionKernels& {
    if (avx512_vnni()) return attention_kernels_avx512();
    if (simd_level() == SimdLevel::kAvx2) return attention_kernels_avx2();
    return attention_kernels_scalar();
  }();
  return kernels;
}

}  // namespace

const AttentionKernels& attention_kernels_scalar() {
  static const AttentionKernels kernels{key_scores_scalar, softmax_rows_scalar,
                                        weighted_values_scalar};
  return kernels;
}

void LayerKvView::store(int64_t pos, const float* k, const float* v) const {
  STRATA_CHECK(pos >= 0 && pos < n_ctx);
  const int64_t tile = pos / kKeyTile, lane = pos % kKeyTile;
  for (int64_t h = 0; h < n_head_kv; ++h) {
    float* key = keys + (h * capacity + tile * kKeyTile) * head_dim + lane;
    float* value_column = values_t + h * head_dim * capacity + pos;
    for (int64_t d = 0; d < head_dim; ++d) {
      key[d * kKeyTile] = k[h * head_dim + d];
      value_column[d * capacity] = v[h * head_dim + d];
    }
  }
}

uint64_t AttentionScratch::floats_for(int64_t n_ctx, int n_threads) {
  return uint64_t(n_threads) * kMaxHeadsTogether * uint64_t(LayerKvView::capacity_for(n_ctx));
}

void attention(ThreadPool& pool, const AttentionShape& shape, const LayerKvView& kv, const float* q,
               int64_t n_tokens, int64_t pos0, float* out, AttentionScratch& scratch) {
  STRATA_CHECK(shape.n_head % shape.n_head_kv == 0);
  STRATA_CHECK_LE(pos0 + n_tokens, kv.n_ctx);
  const AttentionKernels& kernels = selected_kernels();
  const int64_t group = shape.n_head / shape.n_head_kv;
  const int64_t head_dim = shape.head_dim;
  // A group larger than the kernels take is split into near-equal chunks.
  const int64_t n_chunks = (group + kMaxHeadsTogether - 1) / kMaxHeadsTogether;
  const int64_t chunk_heads = (group + n_chunks - 1) / n_chunks;
  const int64_t stride = kv.capacity;
  scratch.scores.resize(size_t(pool.size()));
  for (auto& scores : scratch.scores)
    if (int64_t(scores.size()) < kMaxHeadsTogether * stride)
      scores.resize(size_t(kMaxHeadsTogether * stride));

  pool.parallel_for(n_tokens * shape.n_head_kv * n_chunks, [&](int64_t index, int thread) {
    const int64_t chunk = index % n_chunks, kv_head = index / n_chunks % shape.n_head_kv,
                  t = index / n_chunks / shape.n_head_kv;
    const int64_t h0 = kv_head * group + chunk * chunk_heads;
    const int n_heads = int(std::min(chunk_heads, (kv_head + 1) * group - h0));
    const int64_t n_pos = pos0 + t + 1;
    const float* query = q + (t * shape.n_head + h0) * head_dim;
    float* scores = scratch.scores[size_t(thread)].data();
    kernels.key_scores(query, n_heads, kv.keys + kv_head * stride * head_dim, head_dim, n_pos,
                       shape.scale, scores, stride);
    kernels.softmax_rows(scores, n_heads, n_pos, stride);
    kernels.weighted_values(scores, n_heads, stride, kv.values_t + kv_head * head_dim * stride,
                            stride, head_dim, n_pos, out + (t * shape.n_head + h0) * head_dim);
  });
}

}  // namespace strata
