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
  for (int64_t h = 0; h < n_head_kv; ++h) store_head(pos, h, k + h * head_dim, v + h * head_dim);
}

void LayerKvView::store_head(int64_t pos, int64_t kv_head, const float* k, const float* v) const {
  store_head_key(pos, kv_head, k);
  store_head_value(pos, kv_head, v);
}

void LayerKvView::store_head_key(int64_t pos, int64_t kv_head, const float* k) const {
  STRATA_CHECK(pos >= 0 && pos < n_ctx);
  const int64_t tile = pos / kKeyTile, lane = pos % kKeyTile;
  float* key = keys + (kv_head * capacity + tile * kKeyTile) * head_dim + lane;
  for (int64_t d = 0; d < head_dim; ++d) key[d * kKeyTile] = k[d];
}

void LayerKvView::store_head_value(int64_t pos, int64_t kv_head, const float* v) const {
  STRATA_CHECK(pos >= 0 && pos < n_ctx);
  float* value_column = values_t + kv_head * head_dim * capacity + pos;
  for (int64_t d = 0; d < head_dim; ++d) value_column[d * capacity] = v[d];
}

uint64_t AttentionScratch::floats_for(int64_t n_ctx, int n_threads) {
  return uint64_t(n_threads) * kMaxHeadsTogether * uint64_t(LayerKvView::capacity_for(n_ctx));
}

void AttentionScratch::prepare(int n_threads, int64_t capacity) {
  scores.resize(size_t(n_threads));
  for (auto& rows : scores)
    if (int64_t(rows.size()) < kMaxHeadsTogether * capacity)
      rows.resize(size_t(kMaxHeadsTogether * capacity));
}

namespace {

// The query heads of KV head `kv_head` numbered [h0, h0 + n_heads), at most kMaxHeadsTogether,
// for one token that sees positions [0, n_pos): q and out are the token's rows.
void attend(const AttentionKernels& kernels, const AttentionShape& shape, const LayerKvView& kv,
            const float* q, int64_t n_pos, int64_t kv_head, int64_t h0, int n_heads, float* out,
            float* scores) {
  const int64_t head_dim = shape.head_dim, stride = kv.capacity;
  kernels.key_scores(q + h0 * head_dim, n_heads, kv.keys + kv_head * stride * head_dim, head_dim,
                     n_pos, shape.scale, scores, stride);
  kernels.softmax_rows(scores, n_heads, n_pos, stride);
  kernels.weighted_values(scores, n_heads, stride, kv.values_t + kv_head * head_dim * stride,
                          stride, head_dim, n_pos, out + h0 * head_dim);
}

// A group larger than the kernels take is split into near-equal chunks.
struct GroupChunks {
  int64_t group, n_chunks, chunk_heads;
  explicit GroupChunks(const AttentionShape& shape)
      : group(shape.n_head / shape.n_head_kv),
        n_chunks((group + kMaxHeadsTogether - 1) / kMaxHeadsTogether),
        chunk_heads((group + n_chunks - 1) / n_chunks) {}
  int64_t first_head(int64_t kv_head, int64_t chunk) const {
    return kv_head * group + chunk * chunk_heads;
  }
  int heads(int64_t kv_head, int64_t h0) const {
    return int(std::min(chunk_heads, (kv_head + 1) * group - h0));
  }
};

}  // namespace

void attention(ThreadPool& pool, const AttentionShape& shape, const LayerKvView& kv, const float* q,
               int64_t n_tokens, int64_t pos0, float* out, AttentionScratch& scratch) {
  STRATA_CHECK(shape.n_head % shape.n_head_kv == 0);
  STRATA_CHECK_LE(pos0 + n_tokens, kv.n_ctx);
  const AttentionKernels& kernels = selected_kernels();
  const GroupChunks chunks(shape);
  scratch.prepare(pool.size(), kv.capacity);
  pool.parallel_for(n_tokens * shape.n_head_kv * chunks.n_chunks, [&](int64_t index, int thread) {
    const int64_t chunk = index % chunks.n_chunks,
                  kv_head = index / chunks.n_chunks % shape.n_head_kv,
                  t = index / chunks.n_chunks / shape.n_head_kv;
    const int64_t h0 = chunks.first_head(kv_head, chunk);
    const int64_t token_floats = shape.n_head * shape.head_dim;
    attend(kernels, shape, kv, q + t * token_floats, pos0 + t + 1, kv_head, h0,
           chunks.heads(kv_head, h0), out + t * token_floats,
           scratch.scores[size_t(thread)].data());
  });
}

void attention_heads_here(const AttentionShape& shape, const LayerKvView& kv, const float* q,
                          int64_t pos, int64_t kv_head, float* out, float* scores) {
  STRATA_CHECK(shape.n_head % shape.n_head_kv == 0);
  STRATA_CHECK_LT(pos, kv.n_ctx);
  const AttentionKernels& kernels = selected_kernels();
  const GroupChunks chunks(shape);
  for (int64_t chunk = 0; chunk < chunks.n_chunks; ++chunk) {
    const int64_t h0 = chunks.first_head(kv_head, chunk);
    attend(kernels, shape, kv, q, pos + 1, kv_head, h0, chunks.heads(kv_head, h0), out, scores);
  }
}

}  // namespace strata
