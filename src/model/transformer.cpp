#include "model/transformer.h"

#include <algorithm>
#include <limits>

#include "base/check.h"

namespace strata {

Transformer::Transformer(std::shared_ptr<const Model> model, ExpertStore& experts, Backend& backend)
    : model_(std::move(model)), config_(model_->config()), experts_(experts), backend_(backend) {}

uint64_t Transformer::scratch_bytes(const Backend& backend, const Model& model, int64_t batch,
                                    int64_t n_ctx, bool all_logits, bool next_expert_predictor) {
  const ModelConfig& c = model.config();
  const ScratchShape shape{.max_tokens = batch,
                           .n_ctx = n_ctx,
                           .all_logits = all_logits,
                           .next_visit_scores = next_expert_predictor
                                                    ? NextExpertPredictor::kMaxHorizon * c.n_expert
                                                    : 0};
  const uint64_t routed = uint64_t(batch * c.n_expert_used), n_expert = uint64_t(c.n_expert);
  // row_of_pick_, token_of_row_; expert_rows_, expert_offsets_; resident_, used_, best ranks,
  // predictions, jobs and the next-visit scores.
  const uint64_t routing = 2 * routed * sizeof(int64_t) + 2 * n_expert * sizeof(int64_t) +
                           n_expert * (1 + 3 * sizeof(int32_t) + sizeof(ExpertJob)) +
                           uint64_t(shape.next_visit_scores) * sizeof(float);
  // resident_experts_, the layers routed in place.
  const uint64_t in_place =
      backend.routes_in_place()
          ? uint64_t(c.n_layer) * (n_expert * sizeof(ExpertMatrices) +
                                   sizeof(std::vector<ExpertMatrices>) + sizeof(int))
          : 0;
  return backend.scratch_bytes(shape) + routing + in_place;
}

void Transformer::release_scratch() {
  backend_.release_scratch();
  for (auto* v : {&row_of_pick_, &token_of_row_}) std::vector<int64_t>().swap(*v);
}

Status Transformer::check_tokens(std::span<const int32_t> tokens) const {
  for (const int32_t id : tokens)
    if (id < 0 || id >= config_.n_vocab)
      return Status::errorf("token id {} is out of range (the vocabulary has {} tokens)", id,
                            config_.n_vocab);
  return Status();
}

Status Transformer::forward(std::span<const int32_t> tokens, int64_t pos0, KvCache& cache,
                            bool all_logits, std::vector<float>& logits) {
  const int64_t n = int64_t(tokens.size());
  if (n == 0) return Status::error("forward: no tokens");
  if (pos0 < 0 || pos0 + n > cache.n_ctx())
    return Status::errorf("context full: {} tokens at position {} exceed the context of {}", n,
                          pos0, cache.n_ctx());
  STRATA_RETURN_IF_ERROR(check_tokens(tokens));
  const ModelWeights& weights = model_->weights();
  BatchActivations& batch = backend_.begin_batch(n);
  layers_routed_in_place_.clear();
  const bool in_place = routes_in_place(n);
  if (n == 1 && !all_logits && in_place) backend_.begin_repeatable_step(cache);
  // Cache-aware routing sends residency, and a router-input observer reads x back, between the
  // attention and the route.
  const bool repeatable_layers =
      n == 1 && !in_place && routing_.moce_bonus == 0.0f && !router_input_observer_;
  backend_.embed(weights.token_embedding, tokens, batch.hidden);
  for (int layer = 0; layer < int(config_.n_layer); ++layer) {
    if (repeatable_layers) backend_.begin_repeatable_layer(cache, layer);
    backend_.attention(weights.layers[size_t(layer)].attention, layer, pos0, cache, batch.hidden);
    STRATA_RETURN_IF_ERROR(moe_block(layer, batch, n > 1));
  }
  backend_.logits(weights.output_norm, weights.output, batch.hidden, all_logits ? 0 : n - 1,
                  logits);
  // A backend's failed op leaves garbage behind it: the logits are not returned as if computed.
  STRATA_RETURN_IF_ERROR(backend_.failure());
  return account_routes_in_place(n > 1);
}

Status Transformer::forward_sequences(std::span<const SequenceToken> rows,
                                      std::vector<float>& logits) {
  const int64_t n = int64_t(rows.size());
  if (n == 0) return Status::error("forward: no tokens");
  std::vector<int32_t> tokens(static_cast<size_t>(n));
  for (int64_t r = 0; r < n; ++r) {
    const SequenceToken& row = rows[size_t(r)];
    if (row.position < 0 || row.position >= row.cache->n_ctx())
      return Status::errorf("context full: position {} exceeds the context of {}", row.position,
                            row.cache->n_ctx());
    tokens[size_t(r)] = row.token;
  }
  STRATA_RETURN_IF_ERROR(check_tokens(tokens));
  const ModelWeights& weights = model_->weights();
  BatchActivations& batch = backend_.begin_batch(n);
  layers_routed_in_place_.clear();
  backend_.embed(weights.token_embedding, tokens, batch.hidden);
  const int64_t width = batch.hidden.width;
  for (int layer = 0; layer < int(config_.n_layer); ++layer) {
    const AttentionWeights& attention = weights.layers[size_t(layer)].attention;
    for (int64_t r = 0; r < n; ++r)
      backend_.attention(attention, layer, rows[size_t(r)].position, *rows[size_t(r)].cache,
                         Activations{batch.hidden.data + r * width, 1, width});
    STRATA_RETURN_IF_ERROR(moe_block(layer, batch, false));
  }
  backend_.logits(weights.output_norm, weights.output, batch.hidden, 0, logits);
  STRATA_RETURN_IF_ERROR(backend_.failure());
  return account_routes_in_place(false);
}

RouteRequest Transformer::route_request(int layer) {
  RouteRequest request{.k = int(config_.n_expert_used),
                       .renormalize = config_.renormalize_top_k,
                       .moce_bonus = routing_.moce_bonus,
                       .moce_protect = routing_.moce_protect};
  if (request.moce_bonus != 0.0f) {
    // The residency routing sees changes only at deterministic points (ExpertStore).
    resident_.resize(size_t(config_.n_expert));
    for (int32_t e = 0; e < int32_t(config_.n_expert); ++e)
      resident_[size_t(e)] = experts_.is_resident(layer, e) ? 1 : 0;
    request.resident = resident_;
  }
  return request;
}

void Transformer::route(int layer, const BatchActivations& batch, bool prefill) {
  const LayerWeights& w = model_->weights().layers[size_t(layer)];
  if (router_input_observer_)
    router_input_observer_(layer, batch.normed.n_rows, backend_.host_view(batch.normed));
  RouteRequest request = route_request(layer);
  // The next layer's ranking for the read-ahead comes back with the picks, in one wait for a
  // device: h is already what the next router is applied to (predict_next_layers).
  if (const int ranked = experts_ranked(layer + 1, 1); ranked > 0) {
    const LayerWeights& next = model_->weights().layers[size_t(layer + 1)];
    backend_.rms_norm(next.ffn_norm, batch.hidden, batch.lookahead);
    request.lookahead_router = &next.router;
    request.lookahead = batch.lookahead;
    request.lookahead_count = ranked;
  }
  // The experts the host computes read x there.
  request.input_to_host = host_experts_ && !prefill;
  route_ = backend_.route(w.router, batch.normed, request);
  routed(layer, batch.normed.n_rows);
}

int Transformer::experts_watched(int distance) const {
  // The observer records the predictor of the next layer only (what traces replay).
  if (!prediction_observer_ || distance != 1) return 0;
  return int(std::clamp<int64_t>(prediction_count_, 0, config_.n_expert));
}

int Transformer::experts_ranked(int next, int distance) const {
  if (next >= int(config_.n_layer)) return 0;
  return std::max(int(std::clamp<int64_t>(routing_.readahead, 0, config_.n_expert)),
                  experts_watched(distance));
}

void Transformer::routed(int layer, int64_t n_tokens) {
  const int k = int(config_.n_expert_used);
  if (route_observer_)
    for (int64_t t = 0; t < n_tokens; ++t)
      route_observer_(layer, t, route_.picks.subspan(size_t(t * k), size_t(k)),
                      route_.weights.subspan(size_t(t * k), size_t(k)));
  group_rows_by_expert(route_.picks, n_tokens);
}

bool Transformer::routes_in_place(int64_t n_tokens) const {
  // What the host does between a router and its experts (cache-aware routing, read-ahead, the
  // observers of router inputs and predictions) needs the picks there at once.
  return backend_.routes_in_place() && experts_.holds_every_expert() &&
         n_tokens <= Backend::kMaxTokensRoutedInPlace && routing_.moce_bonus == 0.0f &&
         routing_.readahead == 0 && !prediction_observer_ && !router_input_observer_ &&
         !next_expert_predictor_;
}

std::span<const ExpertMatrices> Transformer::resident_experts(int layer) {
  if (resident_experts_.empty()) resident_experts_.resize(size_t(config_.n_layer));
  std::vector<ExpertMatrices>& experts = resident_experts_[size_t(layer)];
  if (experts.empty()) {
    const LayerExpertLayout& l = experts_.layout().layers[size_t(layer)];
    auto matrix = [](const ExpertTensorLayout& t, size_t e) {
      return Matrix{t.type, t.resident[e], t.n_in, t.n_out, t.grouped_rows};
    };
    for (size_t e = 0; e < size_t(config_.n_expert); ++e)
      experts.push_back({matrix(l.gate, e), matrix(l.up, e), matrix(l.down, e)});
  }
  return experts;
}

Status Transformer::account_routes_in_place(bool prefill) {
  for (const int layer : layers_routed_in_place_) {
    route_ = backend_.routed_in_place(layer);
    const int64_t n_tokens = int64_t(route_.picks.size()) / config_.n_expert_used;
    routed(layer, n_tokens);
    // The store's claims, so that its counters are the host path's; they never block.
    experts_.begin_layer(layer, used_, prefill);
    for (;;) {
      STRATA_ASSIGN_OR_RETURN(const std::vector<ClaimedExpert> claimed, experts_.claim_next(layer));
      if (claimed.empty()) break;
      experts_.release(layer, claimed);
    }
    experts_.end_layer(layer);
  }
  layers_routed_in_place_.clear();
  return Status();
}

// Groups the (token, pick) pairs by expert: rows [offset[e], offset[e] + rows[e]) of the
// gathered activations belong to expert e.
void Transformer::group_rows_by_expert(std::span<const int32_t> picks, int64_t n_tokens) {
  const int64_t n_expert = config_.n_expert, k = config_.n_expert_used;
  expert_rows_.assign(size_t(n_expert), 0);
  expert_offsets_.assign(size_t(n_expert), 0);
  for (int32_t e : picks) ++expert_rows_[size_t(e)];
  used_.clear();
  for (int64_t e = 0, next = 0; e < n_expert; ++e) {
    expert_offsets_[size_t(e)] = next;
    next += expert_rows_[size_t(e)];
    if (expert_rows_[size_t(e)] > 0) used_.push_back(int32_t(e));
  }
  const int64_t n_rows = n_tokens * k;
  row_of_pick_.resize(size_t(n_rows));
  token_of_row_.resize(size_t(n_rows));
  std::vector<int64_t> filled(static_cast<size_t>(n_expert), 0);
  for (int64_t p = 0; p < n_rows; ++p) {
    const size_t e = size_t(picks[size_t(p)]);
    const int64_t row = expert_offsets_[e] + filled[e]++;
    row_of_pick_[size_t(p)] = row;
    token_of_row_[size_t(row)] = p / k;
  }
}

std::span<const float> Transformer::predict_next_visit(int layer, const BatchActivations& batch) {
  const int64_t n_scores = next_expert_predictor_->n_scores();
  const std::span<const float> product = backend_.product_of_row(
      next_expert_predictor_->matrix(layer), batch.normed, batch.normed.n_rows - 1);
  const std::span<const float> bias = next_expert_predictor_->bias(layer);
  next_visit_scores_.resize(size_t(n_scores));
  for (int64_t i = 0; i < n_scores; ++i)
    next_visit_scores_[size_t(i)] = product[size_t(i)] + bias[size_t(i)];
  return next_visit_scores_;
}

void Transformer::predict_next_layers(int layer, const BatchActivations& batch) {
  const int64_t n = batch.hidden.n_rows, n_expert = config_.n_expert;
  const int prefetched = int(std::clamp<int64_t>(routing_.readahead, 0, n_expert));
  const int depth = prefetched > 0 ? std::max(routing_.readahead_layers, 1) : 1;
  uint64_t budget = routing_.readahead_bytes_per_token > 0
                        ? routing_.readahead_bytes_per_token / uint64_t(config_.n_layer)
                        : std::numeric_limits<uint64_t>::max();
  for (int distance = 1; distance <= depth; ++distance) {
    const int next = layer + distance;
    const int wanted = experts_ranked(next, distance);
    if (wanted == 0) return;
    const int watched = experts_watched(distance);
    std::span<const int32_t> ranked = route_.ranked;  // the next layer's, from route()
    if (distance > 1) {
      const LayerWeights& w = model_->weights().layers[size_t(next)];
      // hidden holds h after this layer's attention: a later router applied to it, through
      // that layer's norm, predicts that layer's picks (DESIGN.md §2).
      backend_.rms_norm(w.ffn_norm, batch.hidden, batch.lookahead);
      ranked = backend_.rank_experts(w.router, batch.lookahead, wanted);
    }
    // Union over the batch, by best rank across its tokens, then expert id. Rankings order ties
    // by id, so each token's top `prefetched` and top `watched` are prefixes of its top
    // `wanted`.
    std::vector<int>& best_rank = prediction_best_rank_;
    best_rank.assign(size_t(n_expert), prefetched);
    for (int64_t t = 0; t < n; ++t) {
      const std::span<const int32_t> top = ranked.subspan(size_t(t * wanted), size_t(wanted));
      if (watched > 0) prediction_observer_(next, t, top.first(size_t(watched)));
      for (int r = 0; r < prefetched; ++r)
        best_rank[size_t(top[size_t(r)])] = std::min(best_rank[size_t(top[size_t(r)])], r);
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

Status Transformer::moe_block(int layer, BatchActivations& batch, bool prefill) {
  const LayerWeights& w = model_->weights().layers[size_t(layer)];
  backend_.rms_norm(w.ffn_norm, batch.hidden, batch.normed);
  if (routes_in_place(batch.normed.n_rows)) {
    backend_.route_and_compute_experts(layer, w.router, batch.normed, route_request(layer),
                                       resident_experts(layer), batch.moe_out);
    layers_routed_in_place_.push_back(layer);
  } else {
    STRATA_RETURN_IF_ERROR(routed_experts(layer, batch, prefill));
  }
  if (config_.n_ff_shared > 0) backend_.shared_expert(w.shared, batch.normed, batch.moe_out);
  backend_.add(batch.moe_out, batch.hidden);
  return Status();
}

Status Transformer::routed_experts(int layer, BatchActivations& batch, bool prefill) {
  const LayerExpertLayout& layout = experts_.layout().layers[size_t(layer)];
  route(layer, batch, prefill);
  const std::span<const float> next_visit =
      next_expert_predictor_ ? predict_next_visit(layer, batch) : std::span<const float>();
  experts_.begin_layer(layer, used_, prefill);
  predict_next_layers(layer, batch);
  backend_.gather_expert_inputs(batch.normed, token_of_row_, layout.gate.type, layout.up.type,
                                layout.down.type);
  const bool on_host = start_host_experts(layer, layout, batch.normed.n_rows);
  const Status computed = compute_routed_experts(layer, layout);
  // Joined even after a failed claim: the host's thread reads this layer's bookkeeping.
  if (on_host) backend_.write_expert_outputs(host_jobs_, host_experts_->finish());
  STRATA_RETURN_IF_ERROR(computed);
  experts_.end_layer(layer);
  if (next_expert_predictor_) experts_.expect_next_visit(layer, next_visit);
  backend_.mix_experts(row_of_pick_, route_.weights, int(config_.n_expert_used), batch.moe_out);
  return Status();
}

void Transformer::expert_jobs(std::span<const ClaimedExpert> claimed,
                              const LayerExpertLayout& layout, std::vector<ExpertJob>& jobs) const {
  const int64_t n_embd = config_.n_embd, n_ff = config_.n_ff_expert;
  jobs.clear();
  for (const ClaimedExpert& c : claimed) {
    auto slice = [&](const ExpertTensorLayout& t, const uint8_t* bytes, int64_t n_in,
                     int64_t n_out) {
      const bool rearrange =
          c.unit.fresh_from_file && (t.grouped_after_read() || t.ungrouped_after_read());
      return Matrix{t.type, bytes, n_in, n_out, t.grouped_rows, rearrange};
    };
    const size_t e = size_t(c.expert);
    jobs.push_back(
        {slice(layout.gate, c.unit.gate, n_embd, n_ff), slice(layout.up, c.unit.up, n_embd, n_ff),
         slice(layout.down, c.unit.down, n_ff, n_embd), expert_offsets_[e], expert_rows_[e]});
  }
}

bool Transformer::start_host_experts(int layer, const LayerExpertLayout& layout, int64_t n_tokens) {
  if (!host_experts_) return false;
  const std::vector<ClaimedExpert> claimed = experts_.claim_on_host(layer);
  if (claimed.empty()) return false;
  STRATA_CHECK(!route_.input.empty());  // the store leaves experts on the host in decode only
  expert_jobs(claimed, layout, host_jobs_);
  host_experts_->start(route_.input, n_tokens, token_of_row_, layout.gate.type, layout.up.type,
                       layout.down.type, host_jobs_);
  return true;
}

Status Transformer::compute_routed_experts(int layer, const LayerExpertLayout& layout) {
  // Experts whose weights are here are computed while the others load; the grouping into
  // batches follows I/O timing but every expert's output lands in its own rows, so the result
  // does not depend on it.
  for (;;) {
    STRATA_ASSIGN_OR_RETURN(const std::vector<ClaimedExpert> claimed, experts_.claim_next(layer));
    if (claimed.empty()) return Status();
    expert_jobs(claimed, layout, jobs_);
    backend_.compute_experts(jobs_);
    experts_.release(layer, claimed);
  }
}

}  // namespace strata
