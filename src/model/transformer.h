// The forward pass shared by the MoE architectures (DESIGN.md §2), for a batch of consecutive
// tokens of one sequence (one token in decode, a chunk of the prompt in prefill), or for one
// token of each of several sequences decoded together (a server's parallel streams): their
// attention runs per sequence, over its own cache, and their routed experts are computed once
// for all the rows routed to them.
//
//   h = embed(token)
//   per layer:  h += o · attention(rope(norm_qk(q,k)), v)  of  x = rms_norm(h)
//               x  = rms_norm(h); picks = top_k(softmax(router · x))
//               h += sum_k w_k · down_k(silu(gate_k x) * up_k x)  [+ sigmoid(g · x) shared(x)]
//   logits = output · rms_norm(h)
//
// The loop, routing, read-ahead and the ExpertStore protocol are here; the math runs on a
// Backend (backend/backend.h). Routed experts are reached only through the ExpertStore: per
// batch and layer the tokens routed to each expert are grouped (rows of one expert together)
// and each expert is acquired once and computed over all its rows.
#pragma once

#include <strata/status.h>

#include <array>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "backend/backend.h"
#include "experts/expert_store.h"
#include "model/host_experts.h"
#include "model/model.h"
#include "model/next_expert_predictor.h"

namespace strata {

// Called once per layer and token with the chosen experts, best first, and their mixture weights.
using RouteObserver =
    std::function<void(int layer, int64_t token_index, std::span<const int32_t> picks,
                       std::span<const float> weights)>;
// Called once per layer l >= 1 and token with the read-ahead predictor's ranking for layer l
// (made during layer l - 1, see RoutingOptions::readahead): its top experts, best first.
using PredictionObserver =
    std::function<void(int layer, int64_t token_index, std::span<const int32_t>)>;
// Called once per layer with what the router reads: [n_tokens][n_embd] (the normed hidden
// state). For calibration and analysis tools.
using RouterInputObserver =
    std::function<void(int layer, int64_t n_tokens, std::span<const float> router_input)>;

// Routing knobs (DESIGN.md §3). With moce_bonus = 0 routing is exact.
struct RoutingOptions {
  // Cache-aware routing: +bonus on the router logit of resident experts before the top-k,
  // except that the top `moce_protect` picks always come from the unmodified logits. Mixture
  // weights always come from the unmodified logits.
  float moce_bonus = 0.0f;
  int moce_protect = 3;
  // Read-ahead: experts per layer predicted for each of the next `readahead_layers` layers
  // (router_{l+d} applied to norm_{l+d} of layer l's hidden state after its attention) and
  // handed to the store's prefetch. 0: off. Predicting two layers ahead gives a read two
  // layers' compute to land, for a less certain guess about the farther layer: of each layer
  // beyond the next only the top `readahead_far` are read.
  int readahead = 0;
  int readahead_layers = 1;
  int readahead_far = 0;  // predictions read for each layer beyond the next (at most readahead)
  // Bytes of read-ahead reads a token may start, spread evenly over its layers (each layer's
  // share goes to its predictions nearest layer first, best rank first). 0: no byte limit.
  uint64_t readahead_bytes_per_token = 0;
};

class Transformer {
 public:
  Transformer(std::shared_ptr<const Model> model, ExpertStore& experts, Backend& backend);

  // Runs tokens at positions [pos0, pos0 + n), appending their keys and values to `cache`
  // (made by the same backend). logits receives [n][n_vocab] rows if all_logits, else only the
  // last token's row.
  Status forward(std::span<const int32_t> tokens, int64_t pos0, KvCache& cache, bool all_logits,
                 std::vector<float>& logits);

  // One decode step of several sequences: row r is `rows[r].token` at `rows[r].position` of
  // `rows[r].cache`. logits receives [rows][n_vocab]. REQUIRES: distinct caches.
  struct SequenceToken {
    int32_t token = 0;
    int64_t position = 0;
    KvCache* cache = nullptr;
  };
  Status forward_sequences(std::span<const SequenceToken> rows, std::vector<float>& logits);

  void set_route_observer(RouteObserver observer) { route_observer_ = std::move(observer); }
  // `count` experts per prediction; the predictor runs for the observer even with read-ahead
  // off (one router product per layer and token).
  void set_prediction_observer(PredictionObserver observer, int count) {
    prediction_observer_ = std::move(observer);
    prediction_count_ = count;
  }
  // After every visit of a layer, the predictor's estimates for the tokens after the batch's
  // last go to the store's policy (ExpertStore::expect_next_visit).
  void set_next_expert_predictor(std::shared_ptr<const NextExpertPredictor> predictor) {
    next_expert_predictor_ = std::move(predictor);
  }
  void set_router_input_observer(RouterInputObserver observer) {
    router_input_observer_ = std::move(observer);
  }
  void set_routing(const RoutingOptions& options) { routing_ = options; }
  // The experts the store leaves in host memory (ExpertStore::claim_on_host) are computed by
  // `host` while the backend computes the rest.
  void set_host_experts(std::unique_ptr<HostExperts> host) { host_experts_ = std::move(host); }
  const Model& model() const { return *model_; }
  // Frees the batch-sized scratch (after a long prompt).
  void release_scratch();
  // The scratch forward() uses for batches of up to `batch` tokens with `n_ctx` positions: the
  // backend's and the routing bookkeeping's, the line the memory plan counts.
  static uint64_t scratch_bytes(const Backend& backend, const Model& model, int64_t batch,
                                int64_t n_ctx, bool all_logits, bool next_expert_predictor);

 private:
  Status check_tokens(std::span<const int32_t> tokens) const;
  // `prefill`: the rows are a prompt's (the store keeps them from pushing out a conversation's
  // experts).
  Status moe_block(int layer, BatchActivations& batch, bool prefill);
  // The routed experts through the store, the host routing between the ops.
  Status routed_experts(int layer, BatchActivations& batch, bool prefill);
  RouteRequest route_request(int layer);
  // Routes the batch's normed rows: route_, and the rows grouped by expert.
  void route(int layer, const BatchActivations& batch, bool prefill);
  // route_ is the layer's: its observer, and the rows grouped by expert.
  void routed(int layer, int64_t n_tokens);
  // Whether a batch of n_tokens has its experts routed and computed by the backend alone
  // (Backend::routes_in_place).
  bool routes_in_place(int64_t n_tokens) const;
  std::span<const ExpertMatrices> resident_experts(int layer);
  // After the logits: the routes of the layers routed in place go to the observer and the
  // store, in layer order, as the host path gives them.
  Status account_routes_in_place(bool prefill);
  void group_rows_by_expert(std::span<const int32_t> picks, int64_t n_tokens);
  // How many experts of layer `next`, `distance` layers on, the read-ahead and the prediction
  // observer rank (0: none), and how many of those the observer records.
  int experts_ranked(int next, int distance) const;
  int experts_watched(int distance) const;
  // The read-ahead of the layers after `layer` from their routers on h, the next one's ranking
  // from route().
  void predict_next_layers(int layer, const BatchActivations& batch);
  // With a next-expert predictor: the estimates for the next visits of `layer` from the batch's
  // last token.
  std::span<const float> predict_next_visit(int layer, const BatchActivations& batch);
  Status compute_routed_experts(int layer, const LayerExpertLayout& layout);
  // The products of the units `claimed` holds for layer's rows, as ExpertJobs.
  void expert_jobs(std::span<const ClaimedExpert> claimed, const LayerExpertLayout& layout,
                   std::vector<ExpertJob>& jobs) const;
  // Starts the host's share of the layer's experts, if the store left it any: true if it did.
  bool start_host_experts(int layer, const LayerExpertLayout& layout, int64_t n_tokens);

  std::shared_ptr<const Model> model_;
  const ModelConfig& config_;
  ExpertStore& experts_;
  Backend& backend_;
  RouteObserver route_observer_;
  PredictionObserver prediction_observer_;
  int prediction_count_ = 0;
  RouterInputObserver router_input_observer_;
  std::shared_ptr<const NextExpertPredictor> next_expert_predictor_;
  std::vector<float> next_visit_scores_;
  RoutingOptions routing_;

  // Routing bookkeeping on the host, per batch and layer.
  RouteResult route_;                                  // the backend's picks and weights
  std::vector<uint8_t> resident_;                      // [n_expert], for MoCE
  std::vector<int64_t> expert_rows_, expert_offsets_;  // per expert: routed rows, first row
  std::vector<int64_t> row_of_pick_, token_of_row_;    // [n_tokens * n_expert_used]
  std::vector<int32_t> used_;                          // experts with rows, ascending
  std::vector<int> prediction_best_rank_;              // [n_expert]
  std::vector<int32_t> predicted_;
  std::vector<ExpertJob> jobs_, host_jobs_;
  std::unique_ptr<HostExperts> host_experts_;
  std::vector<std::vector<ExpertMatrices>> resident_experts_;  // [n_layer][n_expert], on first use
  std::vector<int> layers_routed_in_place_;                    // this forward pass's
};

}  // namespace strata
