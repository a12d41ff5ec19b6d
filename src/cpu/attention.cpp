#include "cpu/attention.h"

#include "base/check.h"
#include "cpu/elementwise.h"
#include "quant/quant_type.h"

namespace strata {

void LayerKvView::store(int64_t pos, const float* k, const float* v) const {
  STRATA_CHECK(pos >= 0 && pos < n_ctx);
  for (int64_t h = 0; h < n_head_kv; ++h) {
    float* key = keys + (h * n_ctx + pos) * head_dim;
    float* value_column = values_t + h * head_dim * n_ctx + pos;
    for (int64_t d = 0; d < head_dim; ++d) {
      key[d] = k[h * head_dim + d];
      value_column[d * n_ctx] = v[h * head_dim + d];
    }
  }
}

void attention(ThreadPool& pool, const AttentionShape& shape, const LayerKvView& kv, const float* q,
               int64_t n_tokens, int64_t pos0, float* out, AttentionScratch& scratch) {
  STRATA_CHECK(shape.n_head % shape.n_head_kv == 0);
  STRATA_CHECK_LE(pos0 + n_tokens, kv.n_ctx);
  const int64_t group = shape.n_head / shape.n_head_kv;
  const int64_t head_dim = shape.head_dim;
  const VecDotFn dot = quant_traits(QuantType::kF32).vec_dot();
  scratch.scores.resize(size_t(pool.size()));
  for (auto& scores : scratch.scores)
    if (int64_t(scores.size()) < kv.n_ctx) scores.resize(size_t(kv.n_ctx));

  pool.parallel_for(n_tokens * shape.n_head, [&](int64_t index, int thread) {
    const int64_t t = index / shape.n_head, h = index % shape.n_head, kv_head = h / group;
    const int64_t n_pos = pos0 + t + 1;
    const float* query = q + (t * shape.n_head + h) * head_dim;
    float* scores = scratch.scores[size_t(thread)].data();
    // scores[j] = q · k_j: the query is the "weight row", the keys are n_pos columns.
    dot(head_dim, query, kv.keys + kv_head * kv.n_ctx * head_dim, size_t(head_dim) * sizeof(float),
        int(n_pos), scores);
    for (int64_t j = 0; j < n_pos; ++j) scores[j] *= shape.scale;
    softmax(scores, n_pos);
    // out[d] = probabilities · v_t[d][0..n_pos): one column per output dimension.
    dot(n_pos, scores, kv.values_t + kv_head * head_dim * kv.n_ctx,
        size_t(kv.n_ctx) * sizeof(float), int(head_dim), out + (t * shape.n_head + h) * head_dim);
  });
}

}  // namespace strata
