#include "model/transformer.h"

#include <cmath>
#include <cstring>

#include "base/check.h"
#include "cpu/elementwise.h"
#include "cpu/rope.h"
#include "cpu/topk.h"

namespace strata {
namespace {

QuantType activation_type(const Matrix& w) { return quant_traits(w.type).vec_dot_type; }

void add_bias(float* rows, int64_t n_rows, const Vector& bias) {
  if (bias.empty()) return;
  const int64_t n = int64_t(bias.size());
  for (int64_t r = 0; r < n_rows; ++r)
    for (int64_t i = 0; i < n; ++i) rows[r * n + i] += bias[size_t(i)];
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
    convert_rows(pool_, x, n_rows, n_in, n_in, type, converted_[slot]);
    converted_valid_[slot] = true;
  }
  return converted_[slot];
}

void Transformer::invalidate_converted() { converted_valid_.fill(false); }

Status Transformer::forward(std::span<const int32_t> tokens, int64_t pos0, KvCache& cache,
                            bool all_logits, std::vector<float>& logits) {
  const int64_t n = int64_t(tokens.size());
  const int64_t n_embd = config_.n_embd;
  if (n == 0) return Status::error("forward: no tokens");
  if (pos0 < 0 || pos0 + n > cache.n_ctx())
    return Status::errorf("context full: {} tokens at position {} exceed the context of {}", n,
                          pos0, cache.n_ctx());
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
  const ConvertedRows& xq = converted(normed_.data(), n, n_embd, activation_type(w.q));
  const ConvertedRows& xk = converted(normed_.data(), n, n_embd, activation_type(w.k));
  const ConvertedRows& xv = converted(normed_.data(), n, n_embd, activation_type(w.v));
  const MatmulJob jobs[] = {{&w.q, &xq, 0, n, q_.data(), q_dim},
                            {&w.k, &xk, 0, n, k_.data(), kv_dim},
                            {&w.v, &xv, 0, n, v_.data(), kv_dim}};
  run_matmuls(pool_, jobs);
  add_bias(q_.data(), n, w.q_bias);
  add_bias(k_.data(), n, w.k_bias);
  add_bias(v_.data(), n, w.v_bias);
  norm_heads(q_.data(), n * config_.n_head, head_dim, w.q_norm, config_.rms_eps);
  norm_heads(k_.data(), n * config_.n_head_kv, head_dim, w.k_norm, config_.rms_eps);

  const RopeNeox rope(head_dim, config_.rope_freq_base);
  const LayerKvView kv = cache.layer(layer);
  for (int64_t t = 0; t < n; ++t) {
    rope.apply(q_.data() + t * q_dim, config_.n_head, pos0 + t);
    rope.apply(k_.data() + t * kv_dim, config_.n_head_kv, pos0 + t);
    kv.store(pos0 + t, k_.data() + t * kv_dim, v_.data() + t * kv_dim);
  }
  const AttentionShape shape{config_.n_head, config_.n_head_kv, head_dim,
                             1.0f / std::sqrt(float(head_dim))};
  attn_out_.resize(size_t(n * q_dim));
  attention(pool_, shape, kv, q_.data(), n, pos0, attn_out_.data(), attention_scratch_);

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

  picks_.resize(size_t(n * k));
  pick_weights_.resize(size_t(n * k));
  for (int64_t t = 0; t < n; ++t) {
    float* probabilities = router_logits_.data() + t * n_expert;
    softmax(probabilities, n_expert);
    int32_t* picks = picks_.data() + t * k;
    float* weights = pick_weights_.data() + t * k;
    top_k(probabilities, n_expert, k, picks);
    double sum = 0;
    for (int i = 0; i < k; ++i) {
      weights[i] = probabilities[picks[i]];
      sum += double(weights[i]);
    }
    if (config_.renormalize_top_k)
      for (int i = 0; i < k; ++i) weights[i] /= float(sum);
    if (route_observer_) route_observer_(layer, t, {picks, size_t(k)});
  }
}

Status Transformer::moe_block(int layer, int64_t n) {
  const LayerWeights& w = model_->weights().layers[size_t(layer)];
  const LayerExpertLayout& layout = experts_.layout().layers[size_t(layer)];
  const int64_t n_embd = config_.n_embd, n_ff = config_.n_ff_expert;
  const int k = int(config_.n_expert_used);

  for (int64_t t = 0; t < n; ++t)
    rms_norm(hidden_.data() + t * n_embd, w.ffn_norm.data(), n_embd, config_.rms_eps,
             normed_.data() + t * n_embd);
  invalidate_converted();
  route(layer, n);

  // Group the (token, pick) pairs by expert: rows [offset[e], offset[e] + count[e]) of the
  // gathered activations belong to expert e.
  std::vector<int64_t> count(static_cast<size_t>(config_.n_expert), 0), offset(size_t(config_.n_expert), 0);
  for (int32_t e : picks_) ++count[size_t(e)];
  std::vector<int32_t> used;
  for (int64_t e = 0, next = 0; e < config_.n_expert; ++e) {
    offset[size_t(e)] = next;
    next += count[size_t(e)];
    if (count[size_t(e)] > 0) used.push_back(int32_t(e));
  }
  const int64_t n_rows = n * k;
  std::vector<int64_t> row_of_pick(static_cast<size_t>(n_rows)), token_of_row(static_cast<size_t>(n_rows));
  {
    std::vector<int64_t> filled(static_cast<size_t>(config_.n_expert), 0);
    for (int64_t p = 0; p < n_rows; ++p) {
      const size_t e = size_t(picks_[size_t(p)]);
      const int64_t row = offset[e] + filled[e]++;
      row_of_pick[size_t(p)] = row;
      token_of_row[size_t(row)] = p / k;
    }
  }

  const QuantType gate_input_type = quant_traits(layout.gate.type).vec_dot_type;
  const QuantType up_input_type = quant_traits(layout.up.type).vec_dot_type;
  gather_rows(converted(normed_.data(), n, n_embd, gate_input_type), token_of_row, gathered_gate_);
  if (up_input_type != gate_input_type)
    gather_rows(converted(normed_.data(), n, n_embd, up_input_type), token_of_row, gathered_up_);
  const ConvertedRows& up_input = up_input_type == gate_input_type ? gathered_gate_ : gathered_up_;

  experts_.begin_layer(layer, used);
  std::vector<Matrix> gate(used.size()), up(used.size()), down(used.size());
  for (size_t i = 0; i < used.size(); ++i) {
    STRATA_ASSIGN_OR_RETURN(const ExpertUnit unit, experts_.acquire(layer, used[i]));
    gate[i] = Matrix{layout.gate.type, unit.gate, n_embd, n_ff};
    up[i] = Matrix{layout.up.type, unit.up, n_embd, n_ff};
    down[i] = Matrix{layout.down.type, unit.down, n_ff, n_embd};
  }

  gate_out_.resize(size_t(n_rows * n_ff));
  up_out_.resize(size_t(n_rows * n_ff));
  std::vector<MatmulJob> jobs;
  for (size_t i = 0; i < used.size(); ++i) {
    const size_t e = size_t(used[i]);
    jobs.push_back({&gate[i], &gathered_gate_, offset[e], count[e],
                    gate_out_.data() + offset[e] * n_ff, n_ff});
    jobs.push_back(
        {&up[i], &up_input, offset[e], count[e], up_out_.data() + offset[e] * n_ff, n_ff});
  }
  run_matmuls(pool_, jobs);
  silu_mul(gate_out_.data(), up_out_.data(), n_rows * n_ff, gate_out_.data());

  convert_rows(pool_, gate_out_.data(), n_rows, n_ff, n_ff,
               quant_traits(layout.down.type).vec_dot_type, scratch_rows_);
  down_out_.resize(size_t(n_rows * n_embd));
  jobs.clear();
  for (size_t i = 0; i < used.size(); ++i) {
    const size_t e = size_t(used[i]);
    jobs.push_back({&down[i], &scratch_rows_, offset[e], count[e],
                    down_out_.data() + offset[e] * n_embd, n_embd});
  }
  run_matmuls(pool_, jobs);

  // Mix in pick order (best first), as llama.cpp sums its expert views.
  moe_out_.assign(size_t(n * n_embd), 0.0f);
  for (int64_t t = 0; t < n; ++t)
    for (int i = 0; i < k; ++i) {
      const int64_t p = t * k + i;
      add_scaled(moe_out_.data() + t * n_embd, down_out_.data() + row_of_pick[size_t(p)] * n_embd,
                 pick_weights_[size_t(p)], n_embd);
    }
  experts_.end_layer(layer);

  if (config_.n_ff_shared > 0) shared_expert(w, n);
  for (size_t i = 0; i < size_t(n * n_embd); ++i) hidden_[i] += moe_out_[i];
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
