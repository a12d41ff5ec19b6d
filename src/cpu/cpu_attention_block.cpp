// The attention sublayer on the CPU: norm, q/k/v projections (+ biases), per-head q/k norms,
// NEOX RoPE, the cache write, causal attention over the cache and the output projection.
#include <cmath>

#include "cpu/cpu_backend.h"
#include "cpu/elementwise.h"
#include "cpu/kernels/q4_0_groups.h"
#include "cpu/rope.h"

namespace strata {
namespace {

// In decode, when one KV head's query, key and value rows take at most this many bytes, a task
// computes them and that group's attention: projections, norms, RoPE, the cache write and the
// attention itself in one launch instead of two and a serial step.
constexpr size_t kWholeKvGroupTaskBytes = size_t(256) << 10;
// Up to this many tokens, the cache write goes out by KV head and by keys or values, in a launch
// of its own: a token writes one float to each of 2 x n_head_kv x head_dim cache lines (1,024 a
// layer on the 30B-A3B shape), lines that the attention tasks on other cores read last, so one
// thread doing them all waits on each line's transfer. Longer batches write in their token
// ranges, where a key tile's line takes several of their positions.
constexpr int64_t kMaxTokensStoredByHead = 4;

QuantType activation_type(const Matrix& w) { return quant_traits(w.type).vec_dot_type; }

// rows[r * stride + i] += bias[first + i] for i < count, r < n_rows (stride: the bias's length).
void add_bias(float* rows, int64_t n_rows, const Vector& bias, int64_t first, int64_t count) {
  if (bias.empty()) return;
  const int64_t stride = int64_t(bias.size());
  for (int64_t r = 0; r < n_rows; ++r)
    for (int64_t i = 0; i < count; ++i) rows[r * stride + i] += bias[size_t(first + i)];
}

// Per-head RMSNorm (qwen3's q_norm / k_norm), weight shared by all heads.
void norm_heads(float* rows, int64_t n_vectors, int64_t head_dim, const Vector& weight, float eps) {
  if (weight.empty()) return;
  for (int64_t i = 0; i < n_vectors; ++i)
    rms_norm(rows + i * head_dim, weight.data(), head_dim, eps, rows + i * head_dim);
}

// Rows [first, first + count) of m as a matrix of their own.
Matrix row_range(const Matrix& m, int64_t first, int64_t count) {
  return Matrix{m.type, m.row(first), m.n_in, count, m.grouped_rows, m.rearrange_before_use};
}

AttentionShape attention_shape(const ModelShape& s) {
  return {s.n_head, s.n_head_kv, s.head_dim, 1.0f / std::sqrt(float(s.head_dim))};
}

}  // namespace

void CpuBackend::attention(const AttentionWeights& w, int layer, int64_t pos0, KvCache& cache,
                           Activations hidden) {
  const int64_t n = hidden.n_rows, n_embd = shape_.n_embd, head_dim = shape_.head_dim;
  const Activations input{scratch_.attention_input.data(), n, n_embd};
  rms_norm(w.norm, hidden, input);
  const ConvertedRows& xq = converted(input, activation_type(w.q));
  const ConvertedRows& xk = converted(input, activation_type(w.k));
  const ConvertedRows& xv = converted(input, activation_type(w.v));
  // Made by make_kv_cache(), so it is this backend's.
  const LayerKvView kv = static_cast<CpuKvCache&>(cache).layer(layer);
  const int64_t group = shape_.n_head / shape_.n_head_kv;
  const size_t group_bytes = size_t(group * head_dim) * w.q.row_bytes() +
                             size_t(head_dim) * (w.k.row_bytes() + w.v.row_bytes());
  const bool whole_groups = n == 1 && group_bytes <= kWholeKvGroupTaskBytes &&
                            (head_dim % kQ4_0GroupRows == 0 ||
                             !(w.q.grouped_rows || w.k.grouped_rows || w.v.grouped_rows));
  if (whole_groups) {
    attention_whole_groups(w, kv, pos0, xq, xk, xv);
  } else {
    attention_batch(w, kv, pos0, n, xq, xk, xv);
  }
  matmul(*pool_, w.o, scratch_.attention_out.data(), n, scratch_.projected.data(), scratch_.rows);
  add_rows(scratch_.projected.data(), hidden.data, n, n_embd);
  invalidate_converted(hidden.data);
}

void CpuBackend::attention_whole_groups(const AttentionWeights& w, const LayerKvView& kv,
                                        int64_t pos0, const ConvertedRows& xq,
                                        const ConvertedRows& xk, const ConvertedRows& xv) {
  const int64_t head_dim = shape_.head_dim, group = shape_.n_head / shape_.n_head_kv;
  const int64_t q_dim = shape_.n_head * head_dim, kv_dim = shape_.n_head_kv * head_dim;
  const RopeNeox rope(head_dim, shape_.rope_freq_base);
  const AttentionShape shape = attention_shape(shape_);
  scratch_.attention.prepare(pool_->size(), kv.capacity);
  const RopeNeox::Angles angles = rope.angles(pos0);
  pool_->parallel_for(shape_.n_head_kv, [&](int64_t g, int thread) {
    const int64_t q_first = g * group * head_dim, kv_first = g * head_dim;
    const Matrix wq = row_range(w.q, q_first, group * head_dim),
                 wk = row_range(w.k, kv_first, head_dim), wv = row_range(w.v, kv_first, head_dim);
    float* q = scratch_.q.data() + q_first;
    float* k = scratch_.k.data() + kv_first;
    float* v = scratch_.v.data() + kv_first;
    run_matmul_here({&wq, &xq, 0, 1, q, q_dim});
    run_matmul_here({&wk, &xk, 0, 1, k, kv_dim});
    run_matmul_here({&wv, &xv, 0, 1, v, kv_dim});
    add_bias(q, 1, w.q_bias, q_first, group * head_dim);
    add_bias(k, 1, w.k_bias, kv_first, head_dim);
    add_bias(v, 1, w.v_bias, kv_first, head_dim);
    norm_heads(q, group, head_dim, w.q_norm, shape_.rms_eps);
    norm_heads(k, 1, head_dim, w.k_norm, shape_.rms_eps);
    rope.apply(q, group, angles);
    rope.apply(k, 1, angles);
    kv.store_head(pos0, g, k, v);
    attention_heads_here(shape, kv, scratch_.q.data(), pos0, g, scratch_.attention_out.data(),
                         scratch_.attention.scores[size_t(thread)].data());
  });
}

void CpuBackend::attention_batch(const AttentionWeights& w, const LayerKvView& kv, int64_t pos0,
                                 int64_t n, const ConvertedRows& xq, const ConvertedRows& xk,
                                 const ConvertedRows& xv) {
  const int64_t head_dim = shape_.head_dim;
  const int64_t q_dim = shape_.n_head * head_dim, kv_dim = shape_.n_head_kv * head_dim;
  float *q = scratch_.q.data(), *k = scratch_.k.data(), *v = scratch_.v.data();
  const MatmulJob jobs[] = {
      {&w.q, &xq, 0, n, q, q_dim}, {&w.k, &xk, 0, n, k, kv_dim}, {&w.v, &xv, 0, n, v, kv_dim}};
  run_matmuls(*pool_, jobs);
  const RopeNeox rope(head_dim, shape_.rope_freq_base);
  // Each token's biases, q/k norms, RoPE and cache write; tokens are independent.
  pool_->parallel_ranges(n, min_rows_per_range(q_dim), [&](int64_t begin, int64_t end) {
    const int64_t count = end - begin;
    float *q_rows = q + begin * q_dim, *k_rows = k + begin * kv_dim, *v_rows = v + begin * kv_dim;
    add_bias(q_rows, count, w.q_bias, 0, q_dim);
    add_bias(k_rows, count, w.k_bias, 0, kv_dim);
    add_bias(v_rows, count, w.v_bias, 0, kv_dim);
    norm_heads(q_rows, count * shape_.n_head, head_dim, w.q_norm, shape_.rms_eps);
    norm_heads(k_rows, count * shape_.n_head_kv, head_dim, w.k_norm, shape_.rms_eps);
    for (int64_t t = begin; t < end; ++t) {
      const RopeNeox::Angles angles = rope.angles(pos0 + t);
      rope.apply(q + t * q_dim, shape_.n_head, angles);
      rope.apply(k + t * kv_dim, shape_.n_head_kv, angles);
      if (n > kMaxTokensStoredByHead) kv.store(pos0 + t, k + t * kv_dim, v + t * kv_dim);
    }
  });
  if (n <= kMaxTokensStoredByHead) {
    const int64_t n_head_kv = shape_.n_head_kv;
    pool_->parallel_for(n * n_head_kv * 2, [&](int64_t index, int) {
      const int64_t t = index / (2 * n_head_kv), h = index / 2 % n_head_kv;
      const int64_t offset = t * kv_dim + h * head_dim;
      if (index % 2 == 0)
        kv.store_head_key(pos0 + t, h, k + offset);
      else
        kv.store_head_value(pos0 + t, h, v + offset);
    });
  }
  strata::attention(*pool_, attention_shape(shape_), kv, q, n, pos0, scratch_.attention_out.data(),
                    scratch_.attention);
}

}  // namespace strata
