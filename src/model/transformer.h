// The forward pass shared by the MoE architectures (DESIGN.md §2), for a batch of consecutive
// tokens of one sequence: one token in decode, a chunk of the prompt in prefill.
//
//   h = embed(token)
//   per layer:  h += o · attention(rope(norm_qk(q,k)), v)  of  x = rms_norm(h)
//               x  = rms_norm(h); picks = top_k(softmax(router · x))
//               h += sum_k w_k · down_k(silu(gate_k x) * up_k x)  [+ sigmoid(g · x) shared(x)]
//   logits = output · rms_norm(h)
//
// Routed experts are reached only through the ExpertStore. Per batch and layer the tokens
// routed to each expert are gathered and multiplied as one GEMM, each expert acquired once.
#pragma once

#include <strata/status.h>

#include <array>
#include <functional>
#include <span>
#include <vector>

#include "cpu/attention.h"
#include "cpu/matmul.h"
#include "cpu/thread_pool.h"
#include "experts/expert_store.h"
#include "model/kv_cache.h"
#include "model/model.h"
#include "model/next_expert_predictor.h"

namespace strata {

// Called once per layer and token with the chosen experts, best first.
using RouteObserver = std::function<void(int layer, int64_t token_index, std::span<const int32_t>)>;
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
  Transformer(std::shared_ptr<const Model> model, ExpertStore& experts, ThreadPool& pool);

  // Runs tokens at positions [pos0, pos0 + n), appending their keys and values to `cache`.
  // logits receives [n][n_vocab] rows if all_logits, else only the last token's row.
  Status forward(std::span<const int32_t> tokens, int64_t pos0, KvCache& cache, bool all_logits,
                 std::vector<float>& logits);

  void set_route_observer(RouteObserver observer) { route_observer_ = std::move(observer); }
  // `count` experts per prediction; the predictor runs for the observer even with read-ahead
  // off (one router mat-vec per layer and token).
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
  const Model& model() const { return *model_; }
  // Frees the batch-sized scratch (after a long prompt).
  void release_scratch();
  // The scratch memory forward() holds for batches of up to `batch` tokens with `n_ctx`
  // positions on `n_threads` threads, the logits row(s) it writes included: the line the memory
  // plan counts. Exact, not a bound: before a batch runs, forward() reserves every buffer at
  // the size this sums, so no buffer grows past it (std::vector would double), and it checks
  // that none did. `next_expert_predictor`: a predictor is set (set_next_expert_predictor).
  static uint64_t scratch_bytes(const Model& model, int64_t batch, int64_t n_ctx, int n_threads,
                                bool all_logits, bool next_expert_predictor);

 private:
  void attention_block(int layer, int64_t n_tokens, int64_t pos0, KvCache& cache);
  Status moe_block(int layer, int64_t n_tokens);
  void route(int layer, int64_t n_tokens);
  void predict_next_layers(int layer, int64_t n_tokens);
  // With a next-expert predictor: the estimates for the next visits of `layer` from the batch's
  // last token, into next_visit_scores_.
  void predict_next_visit(int layer, int64_t n_tokens);
  // whole_experts: one task per expert (decode of small experts), else row tasks.
  Status compute_experts(int layer, std::span<const ClaimedExpert> batch, int64_t n_ff,
                         bool whole_experts);
  void shared_expert(const LayerWeights& weights, int64_t n_tokens);
  // x [n_rows][n_in] converted to `type`, cached per type until invalidate_converted().
  const ConvertedRows& converted(const float* x, int64_t n_rows, int64_t n_in, QuantType type);
  void invalidate_converted();

  // Calls visit(member, size) for every scratch buffer forward() resizes, with its largest size
  // in a batch of n_tokens tokens: elements of a vector member, bytes of a ConvertedRows member,
  // and visit.converted(type, bytes) for each slot of converted_ the model uses. One list for
  // what forward() reserves, checks and frees (ScratchAction) and what the plan counts
  // (ScratchCounter).
  template <class Visit>
  static void visit_scratch(const Model& model, int64_t n_tokens, bool all_logits,
                            bool next_expert_predictor, Visit& visit);
  // The ConvertedRows part of the list: activations converted for the weights' dot products.
  template <class Visit>
  static void visit_converted_scratch(const Model& model, int64_t n_tokens, bool all_logits,
                                      bool next_expert_predictor, Visit& visit);
  struct ScratchCounter;
  // Reserve every buffer's listed size; check that none grew past it (a buffer resized beyond
  // its listed size would break the plan's count); free them.
  enum class ScratchStep { kReserve, kCheck, kRelease };
  struct ScratchAction;
  void apply_to_scratch(ScratchStep step, int64_t n_tokens, bool all_logits);
  // Reserves the scratch of a batch of n_tokens (logits: forward()'s output rows).
  void reserve_scratch(int64_t n_tokens, bool all_logits, std::vector<float>& logits);

  std::shared_ptr<const Model> model_;
  const ModelConfig& config_;
  ExpertStore& experts_;
  ThreadPool& pool_;
  RouteObserver route_observer_;
  PredictionObserver prediction_observer_;
  int prediction_count_ = 0;
  RouterInputObserver router_input_observer_;
  std::shared_ptr<const NextExpertPredictor> next_expert_predictor_;
  std::vector<float> next_visit_scores_;
  RoutingOptions routing_;

  // Scratch, sized for the largest batch seen.
  std::vector<float> hidden_, normed_, q_, k_, v_, attn_out_, projected_;
  std::vector<float> router_logits_, moe_out_;
  std::vector<float> scores_;                          // MoCE: logits with the residency bonus
  std::vector<int32_t> picks_;                         // [n_tokens][n_expert_used]
  std::vector<int64_t> expert_rows_, expert_offsets_;  // per expert: routed rows, first row
  std::vector<float> prediction_input_, prediction_logits_;  // [n_tokens][n_embd], [..][n_expert]
  std::vector<int> prediction_best_rank_;                    // [n_expert]
  std::vector<int32_t> prediction_top_;                      // [wanted]
  std::vector<int32_t> predicted_;
  std::vector<float> pick_weights_;                  // [n_tokens][n_expert_used]
  std::vector<int64_t> row_of_pick_, token_of_row_;  // [n_tokens * n_expert_used]
  std::vector<float> gate_out_, up_out_, down_out_;  // [routed rows][...]
  std::vector<float> shared_gate_out_, shared_up_out_, shared_down_out_, shared_scale_;
  std::array<ConvertedRows, 32> converted_;  // indexed by QuantType id
  std::array<bool, 32> converted_valid_{};
  ConvertedRows gathered_gate_, gathered_up_, activations_, scratch_rows_;
  AttentionScratch attention_scratch_;
  // The largest batch reserved since release_scratch(), and whether one kept all logits.
  int64_t scratch_tokens_ = 0;
  bool scratch_all_logits_ = false;
};

}  // namespace strata
