#include "model/transformer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <tuple>

#include "base/check.h"
#include "cpu/elementwise.h"
#include "cpu/kernels/q4_0_groups.h"
#include "cpu/rope.h"
#include "cpu/topk.h"

namespace strata {
namespace {

// In decode, experts of at most this many bytes are computed whole, one task each: gate, up,
// SiLU and down without a launch or a serial step between the projections (strata-tiny-moe's
// 41 KB experts). Larger experts, and batches, whose experts' row counts differ, are split into
// row tasks over two launches, which keeps the threads finishing together (whole experts made
// the tiny model's 512-token prefill ~12 % slower).
constexpr size_t kWholeExpertTaskBytes = size_t(256) << 10;
// In decode, when one KV head's query, key and value rows take at most this many bytes, a task
// computes them and that group's attention: projections, norms, RoPE, the cache write and the
// attention itself in one launch instead of two and a serial step.
constexpr size_t kWholeKvGroupTaskBytes = size_t(256) << 10;

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

// dst.row(r) = src.row(source_rows[r])
void gather_rows(const ConvertedRows& src, const std::vector<int64_t>& source_rows,
                 ConvertedRows& dst) {
  dst.type = src.type;
  dst.row_stride = src.row_stride;
  dst.n_in = src.n_in;
  dst.n_rows = int64_t(source_rows.size());
  dst.bytes.resize(src.row_stride * source_rows.size());
  for (size_t r = 0; r < source_rows.size(); ++r)
    std::memcpy(dst.bytes.data() + r * src.row_stride, src.row(source_rows[r]), src.row_stride);
}

}  // namespace

Transformer::Transformer(std::shared_ptr<const Model> model, ExpertStore& experts, ThreadPool& pool)
    : model_(std::move(model)), config_(model_->config()), experts_(experts), pool_(pool) {}

const ConvertedRows& Transformer::converted(const float* x, int64_t n_rows, int64_t n_in,
                                            QuantType type) {
  const size_t slot = size_t(type);
  STRATA_CHECK_LT(slot, converted_.size());
  if (!converted_valid_[slot]) {
    reshape_rows(converted_[slot], type, n_rows, n_in);
    convert_rows(pool_, x, n_in, 0, n_rows, converted_[slot]);
    converted_valid_[slot] = true;
  }
  return converted_[slot];
}

void Transformer::invalidate_converted() { converted_valid_.fill(false); }

// Sums the bytes of what visit_scratch() lists: the plan's count.
struct Transformer::ScratchCounter {
  uint64_t bytes = 0;
  template <class V>
  void operator()(std::vector<V> Transformer::*, size_t elements) {
    bytes += elements * sizeof(V);
  }
  void operator()(ConvertedRows Transformer::*, size_t row_bytes) { bytes += row_bytes; }
  void converted(QuantType, size_t row_bytes) { bytes += row_bytes; }
};

// Takes one ScratchStep on every buffer visit_scratch() lists.
struct Transformer::ScratchAction {
  Transformer& transformer;
  ScratchStep step;
  template <class V>
  void apply(std::vector<V>& buffer, size_t elements) {
    switch (step) {
      case ScratchStep::kReserve:
        buffer.reserve(elements);
        break;
      case ScratchStep::kCheck:
        STRATA_CHECK_LE(buffer.capacity(), elements);
        break;
      case ScratchStep::kRelease:
        buffer = std::vector<V>();
        break;
    }
  }
  template <class V>
  void operator()(std::vector<V> Transformer::*member, size_t elements) {
    apply(transformer.*member, elements);
  }
  void operator()(ConvertedRows Transformer::*member, size_t row_bytes) {
    apply((transformer.*member).bytes, row_bytes);
  }
  void converted(QuantType type, size_t row_bytes) {
    apply(transformer.converted_[size_t(type)].bytes, row_bytes);
  }
};

template <class Visit>
void Transformer::visit_scratch(const Model& model, int64_t n_tokens, bool all_logits,
                                bool next_expert_predictor, Visit& visit) {
  const ModelConfig& c = model.config();
  const ModelWeights& weights = model.weights();
  const size_t T = size_t(n_tokens), E = size_t(c.n_embd), n_expert = size_t(c.n_expert);
  const size_t F = size_t(c.n_ff_expert), Fs = size_t(c.n_ff_shared);
  const size_t q_dim = size_t(c.n_head * c.head_dim), kv_dim = size_t(c.n_head_kv * c.head_dim);
  const size_t routed = T * size_t(c.n_expert_used);
  const bool shared = Fs > 0;
  for (auto member : {&Transformer::hidden_, &Transformer::normed_, &Transformer::projected_,
                      &Transformer::moe_out_, &Transformer::prediction_input_})
    visit(member, T * E);
  visit(&Transformer::q_, T * q_dim);
  visit(&Transformer::attn_out_, T * q_dim);
  visit(&Transformer::k_, T * kv_dim);
  visit(&Transformer::v_, T * kv_dim);
  visit(&Transformer::router_logits_, T * n_expert);
  visit(&Transformer::prediction_logits_, T * n_expert);
  visit(&Transformer::pick_weights_, routed);
  visit(&Transformer::picks_, routed);
  visit(&Transformer::row_of_pick_, routed);
  visit(&Transformer::token_of_row_, routed);
  visit(&Transformer::gate_out_, routed * F);
  visit(&Transformer::up_out_, routed * F);
  visit(&Transformer::down_out_, routed * E);
  visit(&Transformer::shared_gate_out_, T * Fs);
  visit(&Transformer::shared_up_out_, T * Fs);
  visit(&Transformer::shared_down_out_, shared ? T * E : 0);
  visit(&Transformer::shared_scale_, shared ? T : 0);
  for (auto member : {&Transformer::expert_rows_, &Transformer::expert_offsets_})
    visit(member, n_expert);
  visit(&Transformer::scores_, n_expert);
  visit(&Transformer::prediction_best_rank_, n_expert);
  visit(&Transformer::prediction_top_, n_expert);
  visit(&Transformer::predicted_, n_expert);
  visit(&Transformer::next_visit_scores_,
        next_expert_predictor ? size_t(NextExpertPredictor::kMaxHorizon) * n_expert : 0);
  visit_converted_scratch(model, n_tokens, all_logits, next_expert_predictor, visit);
}

template <class Visit>
void Transformer::visit_converted_scratch(const Model& model, int64_t n_tokens, bool all_logits,
                                          bool next_expert_predictor, Visit& visit) {
  const ModelConfig& c = model.config();
  const ModelWeights& weights = model.weights();
  const size_t T = size_t(n_tokens), E = size_t(c.n_embd), F = size_t(c.n_ff_expert);
  const size_t Fs = size_t(c.n_ff_shared), q_dim = size_t(c.n_head * c.head_dim);
  const size_t routed = T * size_t(c.n_expert_used);
  // `rows` rows of n_in values in the format a weight's dot products read.
  auto rows_for = [](QuantType weight_type, size_t rows, size_t n_in) {
    return rows * quant_traits(quant_traits(weight_type).vec_dot_type).row_bytes(int64_t(n_in));
  };
  std::array<bool, std::tuple_size_v<decltype(converted_)>> slot_used{};  // by activation type
  auto use = [&](QuantType activation) { slot_used[size_t(activation)] = true; };
  // matmul() converts its input into scratch_rows_: the output projection, the logits, the
  // read-ahead's routers, the shared expert's down projection.
  size_t matmul_rows = rows_for(weights.output.type, all_logits ? T : 1, E);
  size_t gathered_gate = 0, gathered_up = 0, activations = 0;
  for (size_t layer = 0; layer < weights.layers.size(); ++layer) {
    const LayerWeights& w = weights.layers[layer];
    const LayerExpertLayout& experts = weights.experts.layers[layer];
    for (const Matrix* m : {&w.q, &w.k, &w.v, &w.router}) use(activation_type(*m));
    use(quant_traits(experts.gate.type).vec_dot_type);
    use(quant_traits(experts.up.type).vec_dot_type);
    gathered_gate = std::max(gathered_gate, rows_for(experts.gate.type, routed, E));
    if (quant_traits(experts.up.type).vec_dot_type != quant_traits(experts.gate.type).vec_dot_type)
      gathered_up = std::max(gathered_up, rows_for(experts.up.type, routed, E));
    activations = std::max(activations, rows_for(experts.down.type, routed, F));
    matmul_rows =
        std::max({matmul_rows, rows_for(w.o.type, T, q_dim), rows_for(w.router.type, T, E)});
    if (Fs > 0) {
      for (QuantType type : {activation_type(w.shared_gate), activation_type(w.shared_up),
                             QuantType::kF32})  // the last: the shared expert's gate input
        use(type);
      matmul_rows = std::max(matmul_rows, rows_for(w.shared_down.type, T, Fs));
    }
  }
  // The predictor's matrices are F32 (NextExpertPredictor::matrix).
  if (next_expert_predictor) use(quant_traits(QuantType::kF32).vec_dot_type);
  for (size_t slot = 0; slot < slot_used.size(); ++slot)
    if (slot_used[slot])
      visit.converted(QuantType(slot), T * quant_traits(QuantType(slot)).row_bytes(int64_t(E)));
  visit(&Transformer::gathered_gate_, gathered_gate);
  visit(&Transformer::gathered_up_, gathered_up);
  visit(&Transformer::activations_, activations);
  visit(&Transformer::scratch_rows_, matmul_rows);
}

uint64_t Transformer::scratch_bytes(const Model& model, int64_t batch, int64_t n_ctx, int n_threads,
                                    bool all_logits, bool next_expert_predictor) {
  ScratchCounter counter;
  visit_scratch(model, batch, all_logits, next_expert_predictor, counter);
  const uint64_t logits = uint64_t(all_logits ? batch : 1) * uint64_t(model.config().n_vocab);
  return counter.bytes + (logits + AttentionScratch::floats_for(n_ctx, n_threads)) * sizeof(float);
}

void Transformer::apply_to_scratch(ScratchStep step, int64_t n_tokens, bool all_logits) {
  ScratchAction action{*this, step};
  visit_scratch(*model_, n_tokens, all_logits, next_expert_predictor_ != nullptr, action);
}

void Transformer::reserve_scratch(int64_t n_tokens, bool all_logits, std::vector<float>& logits) {
  scratch_tokens_ = std::max(scratch_tokens_, n_tokens);
  scratch_all_logits_ |= all_logits;
  apply_to_scratch(ScratchStep::kReserve, n_tokens, all_logits);
  logits.reserve(size_t((all_logits ? n_tokens : 1) * config_.n_vocab));
}

void Transformer::release_scratch() {
  apply_to_scratch(ScratchStep::kRelease, scratch_tokens_, scratch_all_logits_);
  scratch_tokens_ = 0;
  scratch_all_logits_ = false;
  invalidate_converted();
}

Status Transformer::forward(std::span<const int32_t> tokens, int64_t pos0, KvCache& cache,
                            bool all_logits, std::vector<float>& logits) {
  const int64_t n = int64_t(tokens.size());
  const int64_t n_embd = config_.n_embd;
  if (n == 0) return Status::error("forward: no tokens");
  if (pos0 < 0 || pos0 + n > cache.n_ctx())
    return Status::errorf("context full: {} tokens at position {} exceed the context of {}", n,
                          pos0, cache.n_ctx());
  reserve_scratch(n, all_logits, logits);
  const ModelWeights& weights = model_->weights();
  const QuantTraits& embedding = quant_traits(weights.token_embedding.type);
  hidden_.resize(size_t(n * n_embd));
  for (int64_t t = 0; t < n; ++t) {
    const int32_t id = tokens[size_t(t)];
    if (id < 0 || id >= config_.n_vocab)
      return Status::errorf("token id {} is out of range (the vocabulary has {} tokens)", id,
                            config_.n_vocab);
    embedding.dequantize_row(weights.token_embedding.row(id), hidden_.data() + t * n_embd, n_embd);
  }

  for (int layer = 0; layer < int(config_.n_layer); ++layer) {
    attention_block(layer, n, pos0, cache);
    STRATA_RETURN_IF_ERROR(moe_block(layer, n));
  }

  const int64_t first = all_logits ? 0 : n - 1;
  const int64_t n_rows = n - first;
  normed_.resize(size_t(n_rows * n_embd));
  for (int64_t r = 0; r < n_rows; ++r)
    rms_norm(hidden_.data() + (first + r) * n_embd, weights.output_norm.data(), n_embd,
             config_.rms_eps, normed_.data() + r * n_embd);
  logits.resize(size_t(n_rows * config_.n_vocab));
  matmul(pool_, weights.output, normed_.data(), n_rows, logits.data(), scratch_rows_);
  apply_to_scratch(ScratchStep::kCheck, scratch_tokens_, scratch_all_logits_);
  return Status();
}

void Transformer::attention_block(int layer, int64_t n, int64_t pos0, KvCache& cache) {
  const LayerWeights& w = model_->weights().layers[size_t(layer)];
  const int64_t n_embd = config_.n_embd, head_dim = config_.head_dim;
  const int64_t q_dim = config_.n_head * head_dim, kv_dim = config_.n_head_kv * head_dim;

  normed_.resize(size_t(n * n_embd));
  for (int64_t t = 0; t < n; ++t)
    rms_norm(hidden_.data() + t * n_embd, w.attn_norm.data(), n_embd, config_.rms_eps,
             normed_.data() + t * n_embd);
  invalidate_converted();
  q_.resize(size_t(n * q_dim));
  k_.resize(size_t(n * kv_dim));
  v_.resize(size_t(n * kv_dim));
  attn_out_.resize(size_t(n * q_dim));
  const ConvertedRows& xq = converted(normed_.data(), n, n_embd, activation_type(w.q));
  const ConvertedRows& xk = converted(normed_.data(), n, n_embd, activation_type(w.k));
  const ConvertedRows& xv = converted(normed_.data(), n, n_embd, activation_type(w.v));
  const RopeNeox rope(head_dim, config_.rope_freq_base);
  const LayerKvView kv = cache.layer(layer);
  const AttentionShape shape{config_.n_head, config_.n_head_kv, head_dim,
                             1.0f / std::sqrt(float(head_dim))};
  const int64_t group = config_.n_head / config_.n_head_kv;
  // The query, key and value rows of one KV head's group.
  auto group_rows = [&](const Matrix& m, int64_t first, int64_t count) {
    return Matrix{m.type, m.row(first), m.n_in, count, m.grouped_rows, m.group_before_use};
  };
  const size_t group_bytes = size_t(group * head_dim) * w.q.row_bytes() +
                             size_t(head_dim) * (w.k.row_bytes() + w.v.row_bytes());
  const bool whole_groups = n == 1 && group_bytes <= kWholeKvGroupTaskBytes &&
                            (head_dim % kQ4_0GroupRows == 0 ||
                             !(w.q.grouped_rows || w.k.grouped_rows || w.v.grouped_rows));
  if (whole_groups) {
    attention_scratch_.prepare(pool_.size(), kv.capacity);
    const RopeNeox::Angles angles = rope.angles(pos0);
    pool_.parallel_for(config_.n_head_kv, [&](int64_t g, int thread) {
      const int64_t q_first = g * group * head_dim, kv_first = g * head_dim;
      const Matrix wq = group_rows(w.q, q_first, group * head_dim),
                   wk = group_rows(w.k, kv_first, head_dim),
                   wv = group_rows(w.v, kv_first, head_dim);
      float *q = q_.data() + q_first, *k = k_.data() + kv_first, *v = v_.data() + kv_first;
      run_matmul_here({&wq, &xq, 0, 1, q, q_dim});
      run_matmul_here({&wk, &xk, 0, 1, k, kv_dim});
      run_matmul_here({&wv, &xv, 0, 1, v, kv_dim});
      add_bias(q, 1, w.q_bias, q_first, group * head_dim);
      add_bias(k, 1, w.k_bias, kv_first, head_dim);
      add_bias(v, 1, w.v_bias, kv_first, head_dim);
      norm_heads(q, group, head_dim, w.q_norm, config_.rms_eps);
      norm_heads(k, 1, head_dim, w.k_norm, config_.rms_eps);
      rope.apply(q, group, angles);
      rope.apply(k, 1, angles);
      kv.store_head(pos0, g, k, v);
      attention_heads_here(shape, kv, q_.data(), pos0, g, attn_out_.data(),
                           attention_scratch_.scores[size_t(thread)].data());
    });
  } else {
    const MatmulJob jobs[] = {{&w.q, &xq, 0, n, q_.data(), q_dim},
                              {&w.k, &xk, 0, n, k_.data(), kv_dim},
                              {&w.v, &xv, 0, n, v_.data(), kv_dim}};
    run_matmuls(pool_, jobs);
    add_bias(q_.data(), n, w.q_bias, 0, q_dim);
    add_bias(k_.data(), n, w.k_bias, 0, kv_dim);
    add_bias(v_.data(), n, w.v_bias, 0, kv_dim);
    norm_heads(q_.data(), n * config_.n_head, head_dim, w.q_norm, config_.rms_eps);
    norm_heads(k_.data(), n * config_.n_head_kv, head_dim, w.k_norm, config_.rms_eps);
    for (int64_t t = 0; t < n; ++t) {
      const RopeNeox::Angles angles = rope.angles(pos0 + t);
      rope.apply(q_.data() + t * q_dim, config_.n_head, angles);
      rope.apply(k_.data() + t * kv_dim, config_.n_head_kv, angles);
      kv.store(pos0 + t, k_.data() + t * kv_dim, v_.data() + t * kv_dim);
    }
    attention(pool_, shape, kv, q_.data(), n, pos0, attn_out_.data(), attention_scratch_);
  }

  projected_.resize(size_t(n * n_embd));
  matmul(pool_, w.o, attn_out_.data(), n, projected_.data(), scratch_rows_);
  for (size_t i = 0; i < size_t(n * n_embd); ++i) hidden_[i] += projected_[i];
}

void Transformer::route(int layer, int64_t n) {
  const LayerWeights& w = model_->weights().layers[size_t(layer)];
  const int64_t n_expert = config_.n_expert;
  const int k = int(config_.n_expert_used);
  if (router_input_observer_)
    router_input_observer_(layer, n, {normed_.data(), size_t(n * config_.n_embd)});
  router_logits_.resize(size_t(n * n_expert));
  const MatmulJob job{&w.router,
                      &converted(normed_.data(), n, config_.n_embd, activation_type(w.router)),
                      0,
                      n,
                      router_logits_.data(),
                      n_expert};
  run_matmuls(pool_, {&job, 1});

  const bool cache_aware = routing_.moce_bonus != 0.0f;
  const int protect = std::clamp(routing_.moce_protect, 0, k);
  picks_.resize(size_t(n * k));
  pick_weights_.resize(size_t(n * k));
  scores_.resize(size_t(n_expert));
  for (int64_t t = 0; t < n; ++t) {
    float* logits = router_logits_.data() + t * n_expert;
    int32_t* picks = picks_.data() + t * k;
    if (cache_aware) {
      // Resident experts get the bonus, except that the protected top picks come first from
      // the unmodified logits (they are excluded from the rest).
      top_k(logits, n_expert, std::max(protect, 1), picks);
      for (int64_t e = 0; e < n_expert; ++e)
        scores_[size_t(e)] =
            logits[e] + (experts_.is_resident(layer, int32_t(e)) ? routing_.moce_bonus : 0.0f);
      for (int i = 0; i < protect; ++i) scores_[size_t(picks[i])] = -INFINITY;
      if (protect < k) top_k(scores_.data(), n_expert, k - protect, picks + protect);
    }
    softmax(logits, n_expert);  // now probabilities
    if (!cache_aware) top_k(logits, n_expert, k, picks);
    float* weights = pick_weights_.data() + t * k;
    double sum = 0;
    for (int i = 0; i < k; ++i) {
      weights[i] = logits[picks[i]];
      sum += double(weights[i]);
    }
    if (config_.renormalize_top_k)
      for (int i = 0; i < k; ++i) weights[i] /= float(sum);
    if (route_observer_) route_observer_(layer, t, {picks, size_t(k)});
  }
}

void Transformer::predict_next_visit(int layer, int64_t n) {
  if (!next_expert_predictor_) return;
  const int64_t n_embd = config_.n_embd, n_scores = next_expert_predictor_->n_scores();
  next_visit_scores_.resize(size_t(n_scores));
  // One token's n_scores x n_embd product: on this thread, a pool dispatch would cost more.
  const Matrix matrix = next_expert_predictor_->matrix(layer);
  run_matmul_here({&matrix, &converted(normed_.data(), n, n_embd, activation_type(matrix)), n - 1,
                   1, next_visit_scores_.data(), n_scores});
  const std::span<const float> bias = next_expert_predictor_->bias(layer);
  for (int64_t i = 0; i < n_scores; ++i) next_visit_scores_[size_t(i)] += bias[size_t(i)];
}

void Transformer::predict_next_layers(int layer, int64_t n) {
  const int64_t n_embd = config_.n_embd, n_expert = config_.n_expert;
  const int prefetched = int(std::clamp<int64_t>(routing_.readahead, 0, n_expert));
  const int observed =
      prediction_observer_ ? int(std::clamp<int64_t>(prediction_count_, 0, n_expert)) : 0;
  const int depth = prefetched > 0 ? std::max(routing_.readahead_layers, 1) : 1;
  uint64_t budget = routing_.readahead_bytes_per_token > 0
                        ? routing_.readahead_bytes_per_token / uint64_t(config_.n_layer)
                        : std::numeric_limits<uint64_t>::max();
  for (int distance = 1; distance <= depth; ++distance) {
    const int next = layer + distance;
    // The observer records the predictor of the next layer only (what traces replay).
    const int watched = distance == 1 ? observed : 0;
    const int wanted = std::max(prefetched, watched);
    if (wanted == 0 || next >= int(config_.n_layer)) return;
    const LayerWeights& w = model_->weights().layers[size_t(next)];
    // hidden_ holds h after this layer's attention: a later router applied to it, through
    // that layer's norm, predicts that layer's picks (DESIGN.md §2).
    prediction_input_.resize(size_t(n * n_embd));
    prediction_logits_.resize(size_t(n * n_expert));
    for (int64_t t = 0; t < n; ++t)
      rms_norm(hidden_.data() + t * n_embd, w.ffn_norm.data(), n_embd, config_.rms_eps,
               prediction_input_.data() + t * n_embd);
    matmul(pool_, w.router, prediction_input_.data(), n, prediction_logits_.data(), scratch_rows_);
    // Union over the batch, by best rank across its tokens, then expert id. top_k orders ties
    // by id, so each token's top `prefetched` and top `watched` are prefixes of its top
    // `wanted`.
    std::vector<int>& best_rank = prediction_best_rank_;
    std::vector<int32_t>& top = prediction_top_;
    best_rank.assign(size_t(n_expert), prefetched);
    top.resize(size_t(wanted));
    for (int64_t t = 0; t < n; ++t) {
      top_k(prediction_logits_.data() + t * n_expert, n_expert, wanted, top.data());
      if (watched > 0) prediction_observer_(next, t, {top.data(), size_t(watched)});
      for (int r = 0; r < prefetched; ++r)
        best_rank[size_t(top[r])] = std::min(best_rank[size_t(top[r])], r);
    }
    if (prefetched == 0) return;
    const int read = distance == 1 ? prefetched : std::clamp(routing_.readahead_far, 0, prefetched);
    predicted_.clear();
    for (int r = 0; r < read; ++r)
      for (int64_t e = 0; e < n_expert; ++e)
        if (best_rank[size_t(e)] == r) predicted_.push_back(int32_t(e));
    budget -= experts_.prefetch(next, predicted_, budget);
  }
}

Status Transformer::moe_block(int layer, int64_t n) {
  const LayerWeights& w = model_->weights().layers[size_t(layer)];
  const LayerExpertLayout& layout = experts_.layout().layers[size_t(layer)];
  const int64_t n_embd = config_.n_embd, n_ff = config_.n_ff_expert, n_expert = config_.n_expert;
  const int k = int(config_.n_expert_used);

  for (int64_t t = 0; t < n; ++t)
    rms_norm(hidden_.data() + t * n_embd, w.ffn_norm.data(), n_embd, config_.rms_eps,
             normed_.data() + t * n_embd);
  invalidate_converted();
  route(layer, n);

  // Group the (token, pick) pairs by expert: rows [offset[e], offset[e] + rows[e]) of the
  // gathered activations belong to expert e.
  expert_rows_.assign(size_t(n_expert), 0);
  expert_offsets_.assign(size_t(n_expert), 0);
  for (int32_t e : picks_) ++expert_rows_[size_t(e)];
  std::vector<int32_t> used;
  for (int64_t e = 0, next = 0; e < n_expert; ++e) {
    expert_offsets_[size_t(e)] = next;
    next += expert_rows_[size_t(e)];
    if (expert_rows_[size_t(e)] > 0) used.push_back(int32_t(e));
  }
  const int64_t n_rows = n * k;
  std::vector<int64_t>&row_of_pick = row_of_pick_, &token_of_row = token_of_row_;
  row_of_pick.resize(size_t(n_rows));
  token_of_row.resize(size_t(n_rows));
  {
    std::vector<int64_t> filled(static_cast<size_t>(n_expert), 0);
    for (int64_t p = 0; p < n_rows; ++p) {
      const size_t e = size_t(picks_[size_t(p)]);
      const int64_t row = expert_offsets_[e] + filled[e]++;
      row_of_pick[size_t(p)] = row;
      token_of_row[size_t(row)] = p / k;
    }
  }
  predict_next_visit(layer, n);
  experts_.begin_layer(layer, used, n > 1);
  predict_next_layers(layer, n);

  const QuantType gate_input_type = quant_traits(layout.gate.type).vec_dot_type;
  const QuantType up_input_type = quant_traits(layout.up.type).vec_dot_type;
  gather_rows(converted(normed_.data(), n, n_embd, gate_input_type), token_of_row, gathered_gate_);
  if (up_input_type != gate_input_type)
    gather_rows(converted(normed_.data(), n, n_embd, up_input_type), token_of_row, gathered_up_);
  gate_out_.resize(size_t(n_rows * n_ff));
  up_out_.resize(size_t(n_rows * n_ff));
  down_out_.resize(size_t(n_rows * n_embd));
  reshape_rows(activations_, quant_traits(layout.down.type).vec_dot_type, n_rows, n_ff);

  const bool whole_experts = n == 1 && layout.unit_bytes() <= kWholeExpertTaskBytes;
  // Experts whose weights are here are computed while the others load; the grouping into
  // batches follows I/O timing but every expert's output lands in its own rows, so the
  // result does not depend on it.
  for (;;) {
    STRATA_ASSIGN_OR_RETURN(const std::vector<ClaimedExpert> batch, experts_.claim_next(layer));
    if (batch.empty()) break;
    STRATA_RETURN_IF_ERROR(compute_experts(layer, batch, n_ff, whole_experts));
    experts_.release(layer, batch);
  }
  experts_.end_layer(layer);
  if (next_expert_predictor_) experts_.expect_next_visit(layer, next_visit_scores_);

  // Mix in pick order (best first), as llama.cpp sums its expert views.
  moe_out_.assign(size_t(n * n_embd), 0.0f);
  for (int64_t t = 0; t < n; ++t)
    for (int i = 0; i < k; ++i) {
      const int64_t p = t * k + i;
      add_scaled(moe_out_.data() + t * n_embd, down_out_.data() + row_of_pick[size_t(p)] * n_embd,
                 pick_weights_[size_t(p)], n_embd);
    }
  if (config_.n_ff_shared > 0) shared_expert(w, n);
  for (size_t i = 0; i < size_t(n * n_embd); ++i) hidden_[i] += moe_out_[i];
  return Status();
}

Status Transformer::compute_experts(int layer, std::span<const ClaimedExpert> batch, int64_t n_ff,
                                    bool whole_experts) {
  const LayerExpertLayout& layout = experts_.layout().layers[size_t(layer)];
  const int64_t n_embd = config_.n_embd;
  const ConvertedRows& up_input = quant_traits(layout.up.type).vec_dot_type == gathered_gate_.type
                                      ? gathered_gate_
                                      : gathered_up_;
  std::vector<Matrix> gate(batch.size()), up(batch.size()), down(batch.size());
  for (size_t i = 0; i < batch.size(); ++i) {
    const ExpertUnit& unit = batch[i].unit;
    auto slice = [&](const ExpertTensorLayout& t, const uint8_t* bytes, int64_t n_in,
                     int64_t n_out) {
      return Matrix{t.type, bytes,          n_in,
                    n_out,  t.grouped_rows, t.grouped_after_read() && unit.group_before_use};
    };
    gate[i] = slice(layout.gate, unit.gate, n_embd, n_ff);
    up[i] = slice(layout.up, unit.up, n_embd, n_ff);
    down[i] = slice(layout.down, unit.down, n_ff, n_embd);
  }
  auto gate_job = [&](size_t i) -> MatmulJob {
    const size_t e = size_t(batch[i].expert);
    const int64_t first = expert_offsets_[e];
    return {&gate[i], &gathered_gate_, first, expert_rows_[e], gate_out_.data() + first * n_ff,
            n_ff};
  };
  auto up_job = [&](size_t i) -> MatmulJob {
    const size_t e = size_t(batch[i].expert);
    const int64_t first = expert_offsets_[e];
    return {&up[i], &up_input, first, expert_rows_[e], up_out_.data() + first * n_ff, n_ff};
  };
  auto down_job = [&](size_t i) -> MatmulJob {
    const size_t e = size_t(batch[i].expert);
    const int64_t first = expert_offsets_[e];
    return {&down[i], &activations_, first, expert_rows_[e], down_out_.data() + first * n_embd,
            n_embd};
  };
  // SiLU(gate) * up of expert i's rows, in place of gate's, which the down projection reads
  // once converted.
  auto activate = [&](size_t i) {
    const size_t e = size_t(batch[i].expert);
    const int64_t first = expert_offsets_[e], rows = expert_rows_[e];
    silu_mul(gate_out_.data() + first * n_ff, up_out_.data() + first * n_ff, rows * n_ff,
             gate_out_.data() + first * n_ff);
  };

  if (whole_experts) {
    pool_.parallel_for(int64_t(batch.size()), [&](int64_t i, int) {
      run_matmul_here(gate_job(size_t(i)));
      run_matmul_here(up_job(size_t(i)));
      activate(size_t(i));
      const size_t e = size_t(batch[size_t(i)].expert);
      convert_rows_here(gate_out_.data(), n_ff, expert_offsets_[e], expert_rows_[e], activations_);
      run_matmul_here(down_job(size_t(i)));
    });
    return Status();
  }
  std::vector<MatmulJob> jobs;
  for (size_t i = 0; i < batch.size(); ++i) {
    jobs.push_back(gate_job(i));
    jobs.push_back(up_job(i));
  }
  run_matmuls(pool_, jobs);
  jobs.clear();
  for (size_t i = 0; i < batch.size(); ++i) {
    activate(i);
    const size_t e = size_t(batch[i].expert);
    convert_rows(pool_, gate_out_.data(), n_ff, expert_offsets_[e], expert_rows_[e], activations_);
    jobs.push_back(down_job(i));
  }
  run_matmuls(pool_, jobs);
  return Status();
}

void Transformer::shared_expert(const LayerWeights& w, int64_t n) {
  const int64_t n_embd = config_.n_embd, n_ff = config_.n_ff_shared;
  shared_gate_out_.resize(size_t(n * n_ff));
  shared_up_out_.resize(size_t(n * n_ff));
  shared_scale_.resize(size_t(n));
  const Matrix gate_input{QuantType::kF32,
                          reinterpret_cast<const uint8_t*>(w.shared_gate_input.data()), n_embd, 1};
  const MatmulJob jobs[] = {
      {&w.shared_gate, &converted(normed_.data(), n, n_embd, activation_type(w.shared_gate)), 0, n,
       shared_gate_out_.data(), n_ff},
      {&w.shared_up, &converted(normed_.data(), n, n_embd, activation_type(w.shared_up)), 0, n,
       shared_up_out_.data(), n_ff},
      {&gate_input, &converted(normed_.data(), n, n_embd, QuantType::kF32), 0, n,
       shared_scale_.data(), 1}};
  run_matmuls(pool_, jobs);
  silu_mul(shared_gate_out_.data(), shared_up_out_.data(), n * n_ff, shared_gate_out_.data());
  shared_down_out_.resize(size_t(n * n_embd));
  matmul(pool_, w.shared_down, shared_gate_out_.data(), n, shared_down_out_.data(), scratch_rows_);
  for (int64_t t = 0; t < n; ++t) {
    const float scale = sigmoid(shared_scale_[size_t(t)]);
    for (int64_t i = 0; i < n_embd; ++i)
      moe_out_[size_t(t * n_embd + i)] += shared_down_out_[size_t(t * n_embd + i)] * scale;
  }
}

}  // namespace strata
