// LRFU: least recently/frequently used (Lee et al., IEEE Trans. Computers 2001), with the
// history of every unit kept, resident or not.
//
// Each use of a unit adds weight 1, which halves every `half_life` accesses (time counts the
// accesses the policy sees: inserts and uses). The victim is the evictable resident unit with
// the least total weight now; among equal weights, the one accessed longest ago. A short
// half-life makes it LRU, an infinite one LFU.
//
// Why this shape for MoE experts: a layer picks k of n experts per token with a skewed but
// drifting popularity, and once the arena holds fewer units than one token needs (n_layer * k),
// every recency policy evicts each unit before its layer comes round again and hits nothing.
// Weights remembered across evictions let the popular units stay and the rare ones pass
// through. Half-lives of 0.25x..64x the capacity were tried on traces of strata-tiny-moe (8
// layers, top-8 of 64; bench/cache_lab.sh, its tuning set): 8x was the best or within 1 point
// of the best at arenas of 10..50 % of the units. On the held-out traces it hits 55.6 % at 25 %
// (LRU 46.8 %, Belady's MIN 73.6 %).
//
// Scan inserts (units streamed for a prompt) add no weight: the unit keeps the weight its
// earlier uses left, so a prompt's units go first unless they were already popular.
//
// Weights are kept as log2(sum of 2^(t_i / half_life)); all units decay at the same rate, so
// their order changes only when one is used, and an ordered set gives O(log n) per operation;
// victim() costs one more step per pinned unit it passes over.
// Thread-compatibility: one thread at a time.
#pragma once

#include <limits>
#include <set>
#include <tuple>
#include <vector>

#include "experts/replacement_policy.h"

namespace strata {

class LrfuPolicy final : public ReplacementPolicy {
 public:
  // The half-life in accesses, per slot of the cache (see above).
  static constexpr double kHalfLifePerSlot = 8;

  // REQUIRES: half_life > 0 (accesses)
  explicit LrfuPolicy(double half_life);

  void on_insert(uint32_t unit, bool scan) override;
  void on_access(uint32_t unit) override;
  void on_remove(uint32_t unit) override;
  std::optional<uint32_t> victim(const std::function<bool(uint32_t)>& evictable) override;

 private:
  struct Entry {
    bool resident = false;
    double log_weight = -std::numeric_limits<double>::infinity();  // no use yet
    uint64_t last_access = 0;  // tick_ of the last insert or use: the tie-break
  };
  // (log_weight, last_access, unit) of resident units: begin() is the next victim.
  using OrderKey = std::tuple<double, uint64_t, uint32_t>;

  Entry& resident_entry(uint32_t unit);
  void add_use(Entry& entry) const;

  double half_life_;
  std::vector<Entry> entries_;  // indexed by unit
  std::set<OrderKey> order_;
  uint64_t tick_ = 0;
};

}  // namespace strata
