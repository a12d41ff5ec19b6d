// Next-use: an online approximation of Belady's MIN for expert units, which evicts the unit
// expected to be needed the furthest in the future.
//
// The forward pass visits the layers in a fixed cycle, one visit per token (or prompt chunk),
// so a unit of layer j can next be needed at the next visit of j: d = (j - l) mod n_layer
// visits from now while layer l runs (n_layer for l itself). If it is used at each later
// visit of its layer with probability q, its next use is expected
//
//     E = d + n_layer * (1 - q) / q     visits from now,
//
// and the victim is the evictable resident unit with the largest E; among equal ones, the one
// inserted or used longest ago.
//
// q is learned online, from the past only. Each unit has a gap (visits of its layer since it
// was last used: 1 = used at the previous visit) and a frequency (its uses per visit, each
// decaying by half over kHalfLifeVisits visits of its layer). At every counted visit of a layer
// each of its units becomes one sample of a table indexed by (gap bucket, frequency bucket):
// was it used at this visit, given its gap and frequency before it? q is the table's rate for
// the unit's gap and frequency at its next visit, pulled towards the overall rate with the weight
// of kPriorSamples samples. Gaps are bucketed 1, 2, 3, 4, then by octave (5-7, 8-15, ...),
// with one bucket for units never used; frequencies by thirds of an octave from 1/n_expert per
// visit up to 1, with one bucket below.
//
// Why: on traces of strata-tiny-moe (8 layers, top-8 of 64; bench/cache_lab.sh) the chance
// that an expert is used at the next token falls with the gap and rises with the frequency in
// ways neither LRU nor LFU capture: 0.68 after a use for a unit used in half of the recent
// tokens, 0.26 for one used in one of eight, 0.17 for the same unit one token later. With a
// cache smaller than one token's experts (n_layer * k) a recency policy evicts every unit
// before its layer comes round; the distance term keeps the units of the next layers and lets
// the ones just used go when they are unlikely to be used again. On the tuning traces, the
// learned table beat a plain decayed frequency as q by 0.5-1.5 points of hit rate, a third of
// an octave beat whole octaves by 0.5 points at a 25 % arena, and per-layer quotas lost 0.6
// points. Half-lives of 16..256 visits were within 0.3 points of each other.
//
// With successor ranks ("successor"; plain "nextuse" has none), q also depends on which
// experts the layer's latest visit used: the table gains a third index, the unit's rank for the
// next visit by how often it followed those experts (experts/successor_ranks.h), and each of
// its cells is pulled towards the (gap, frequency) rate. While a layer's visit runs, its own
// units go without the rank (it was about this visit).
//
// Why: on the tuning traces the top 8 of a layer by successor score held 43.5 % of the next
// token's experts, by decayed frequency 36.3 % (counting what followed the experts of all of
// the previous token's layers: 42.8 %, no better). Hit rate, successor / nextuse / MIN at 10,
// 25, 50 % arenas: 31.9 / 30.3 / 47.6, 58.5 / 57.6 / 73.7, 82.0 / 81.9 / 90.8 %. What did
// not help, measured the same way: the read-ahead predictor's ranks for the next layer as q
// (-3.5 points at 25 %); even the next layer's actual experts gave +0.3, all the remaining
// layers' of the token +0.6: what decides hits is which units outlive a whole token, and the
// predictor sees only the current one. Evicting by largest d^a / q instead of E: within
// 0.5 points for a in 0..2. Decaying the successor counts: within 0.1.
//
// Priors learned offline did not help either (cachesim on the held-out traces, each document
// starting from counts summed over the tuning documents, variants chosen by leave-one-out on
// those): the (gap, frequency) table at one document's weight +0.4 points at 25 % (58.7 %),
// the successor counts -0.3..+0.1 (domains differ), per-unit popularity as the starting
// frequency +0.1; over the first 128 tokens the table gave +1.6. Priors from the held-out
// document itself gave +1.6 over all tokens (59.9 %, MIN 73.6 %): warm-up is not what is
// missing.
//
// With the next-token predictor's scores ("predicted", model/next_expert_predictor.h): after
// each visit of a layer the transformer estimates, from the hidden state, each of the layer's
// experts' chance to be used at each of its next H visits (on_next_visit_scores). q_s, for the
// s-th visit from now, is the mean of that estimate (clamped to [0.001, 1]) and the (gap,
// frequency) rate; the unit's next use is then expected after
//
//     sum_s (s - 1) q_s prod_{j<s} (1 - q_j) + prod_s (1 - q_s) (H - 1 + 1 / mean_s q_s)
//
// visits of its layer after the next, that is, at the first of the H visits it is used at, or
// after them at the mean rate (with H = 1: (1 - q) / q as above). Without an estimate for the
// next visit yet, or while the layer's own visit runs, q is the rate alone. A prompt chunk's
// estimate is about its last token, so it stands for the first token after it.
//
// Why: the hidden state carries what the model expects next. On strata-tiny-moe's held-out
// documents a fitted predictor's top quarter of a layer held 70.8 % of the next token's experts,
// the best decayed count 56.5 %. In the real arena at 25 % (read-ahead off, the six held-out
// documents) hits were 57.8 % with successor, 59.0 % with the predictor's rank buckets in
// place of successor ranks, 59.6 % with the mean above for the next token alone (59.4 % at 0.7
// of the estimate and 0.3 of the rate, 59.1 % at 0.3 / 0.7; MIN 73.3 %), 59.9 % with H = 2.
//
// Prompt chunks (on_layer with prefill) are not counted: their union of experts says little
// about one token's, so they add no samples, no visits and no uses; they still move the layer
// clock, and the visit after one has no successor ranks. Scan inserts add no use either.
//
// A policy learns only from layers whose units it has held (the arena keeps a policy per size
// class, and each sees every layer's on_layer).
//
// Cost: on_layer is O(n_expert), with successor ranks O(n_expert * k + n_expert log n_expert).
// Between two on_layer() calls a unit's E changes only when it is inserted or accessed, so the
// first victim() after on_layer() computes every resident unit's E into an array beside the
// resident list, O(capacity), inserts and accesses update their entry, and each victim() scans
// the array for the largest E, asking `evictable` only of units that would beat the best so
// far. Without the predictor E is the distance plus a tail that depends only on the unit's
// (rank bucket, cell) pair, which changes only with the unit's uses and its layer's visits and
// ranks: each resident unit's pair is kept beside it, refreshed for the units touched and for
// the two layers whose visit begins or ends, and the tails are computed once a pair and layer.
// A device arena fed from host memory evicts a few units per layer, each copied in tens of
// microseconds: on an H200 host a heap of candidates rebuilt at every layer from each unit's
// own E took a fifth of a 25 % arena's decode (`bench/replacement_policy_bench.cpp`).
// Thread-compatibility: one thread at a time.
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "experts/replacement_policy.h"
#include "experts/successor_ranks.h"

namespace strata {

class NextUsePolicy final : public ReplacementPolicy {
 public:
  static constexpr double kHalfLifeVisits = 32;
  static constexpr double kPriorSamples = 10;

  // What q learns from beyond a unit's gap and frequency (see above).
  enum class Signal { kHistory, kSuccessors, kPredictor };

  // REQUIRES: n_layer >= 1, n_expert >= 1
  NextUsePolicy(int n_layer, int n_expert, Signal signal);

  void on_layer(int layer, bool prefill) override;
  void on_next_visit_scores(int layer, std::span<const float> scores) override;
  void on_insert(uint32_t unit, bool scan) override;
  void on_access(uint32_t unit) override;
  void on_remove(uint32_t unit) override;
  std::optional<uint32_t> victim(const std::function<bool(uint32_t)>& evictable) override;

  // The learned probability that `unit` is used at the next visit of its layer, and its
  // expected next use in layer visits from now (E above).
  double use_probability(uint32_t unit) const;
  double expected_next_use(uint32_t unit) const;

 private:
  struct Unit {
    int32_t layer = 0;  // unit / n_expert, kept: victim() needs it for every resident unit
    double weight = 0;  // decayed uses, as of its layer's visit `weight_visit`
    int64_t weight_visit = 0;
    int64_t last_use = -1;        // its layer's visit count at its last use; -1: never
    uint64_t last_touch = 0;      // tick_ at the last insert or access: the tie-break
    int32_t resident_index = -1;  // into resident_; -1: not resident
    // cell() at its layer's visit number cell_visit + 1; victim() asks for it for every
    // resident unit at every miss, and it changes only with the unit's uses and its layer's
    // visits. -1: not computed since the unit was last used.
    mutable int64_t cell_visit = -1;
    mutable int cell = 0;
  };
  struct Layer {
    int64_t visits = 0;     // counted visits so far (the current one included)
    double visit_mass = 0;  // the decayed weight of a unit used at every one of them
    bool held = false;      // one of its units was inserted here
  };

  Unit& unit_at(uint32_t unit);
  // The table cell of `unit` at its layer's visit number `visit` (after the current one).
  int cell(uint32_t unit, int64_t visit) const;
  // cell(unit, visits + 1) for the unit's layer, from the unit's cache when it is current.
  int next_visit_cell(uint32_t unit) const;
  double rate(int cell) const;
  // With successor ranks: the rate of (rank bucket, cell), pulled towards rate(cell).
  double ranked_rate(int bucket, int cell) const;
  // With the predictor: the unit's estimates for its layer's next visits; empty if it has none
  // (or the layer's visit runs).
  std::span<const float> predictions_for(uint32_t unit) const;
  // q for one visit: the mean of the estimate and the unit's (gap, frequency) rate.
  static double predicted_probability(double rate, float estimate);
  // E's part after the distance from the unit's estimates (see above).
  double predicted_tail(std::span<const float> estimates, double rate) const;
  // q for a rank bucket (-1: none) and a cell, and the unit's bucket for its layer's next visit.
  double probability(int bucket, int cell) const;
  int next_visit_bucket(uint32_t unit) const;
  // n_layer * (1 - q) / q, E's part after the distance. victim() needs it for every resident unit
  // at every miss (a 30B-A3B arena at 25 % holds 1,536 units), and it depends only on the
  // (bucket, cell) pair and the tables, which change once per counted visit: it is kept per pair
  // and recomputed when table_generation_ has moved.
  double next_use_tail(int bucket, int cell) const;
  // Without the predictor: the unit's (rank bucket + 1, cell) pair as an index of tails_, and
  // the tail at such an index.
  int next_visit_pair(uint32_t unit) const;
  double tail_at(int pair) const;
  // The pairs of `layer`'s resident units are recomputed (its visit begins or ends).
  void refresh_pairs(int layer);
  void count_use(uint32_t unit);
  void learn_from_visit();
  // The unit's E may have changed: its entries beside resident_ are recomputed.
  void touched(uint32_t unit);
  void compute_next_uses();
  int n_layer_, n_expert_;
  int n_frequency_;  // frequency buckets
  double decay_;     // per visit
  std::vector<Unit> units_;
  std::vector<Layer> layers_;
  std::vector<uint32_t> resident_;
  std::vector<double> uses_, samples_;  // [gap bucket][frequency bucket]
  double total_uses_ = 0, total_samples_ = 0;
  std::vector<int> visit_cells_;  // [expert]: cells at the start of the current counted visit
  std::optional<SuccessorRanks> successors_;
  bool predicted_ = false;
  int horizon_ = 0;                 // visits each estimate covers; 0: none came yet
  std::vector<float> predictions_;  // [layer][expert][horizon]; NaN: none yet
  std::vector<double> ranked_uses_, ranked_samples_;  // [rank bucket][gap][frequency]
  std::vector<int> visit_buckets_;     // [expert]: rank buckets at the start of the visit; -1: none
  uint64_t table_generation_ = 1;      // bumped whenever the tables above change
  mutable std::vector<double> tails_;  // [rank bucket + 1][cell]
  mutable std::vector<uint64_t> tail_generations_;  // of each entry of tails_; 0: never
  std::vector<uint8_t> followed_;                   // [layer]: its latest visit was counted
  int current_layer_;
  bool counting_ = false;  // the current visit is counted
  bool in_prefill_ = false;
  uint64_t tick_ = 0;
  // Beside resident_: each unit's layer, its pair (without the predictor), and its E, current
  // while next_uses_current_ is (computed at the first victim() of a layer).
  std::vector<int32_t> resident_layer_, resident_pair_;
  std::vector<double> resident_next_use_;
  std::vector<double> distances_;  // [layer]: as of the current layer
  bool next_uses_current_ = false;
};

}  // namespace strata
