// Which resident expert unit the arena evicts when it needs a slot. Units are numbered
// layer * n_expert + expert. The arena and `strata cachesim` use the same implementations.
//
// Thread-compatibility: one thread at a time (the arena calls it under its lock).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include <strata/status.h>

namespace strata {

class ReplacementPolicy {
 public:
  virtual ~ReplacementPolicy() = default;

  // A layer begins: called before the accesses of each layer visit (a token, or a prompt
  // chunk when `prefill`, whose units come as scan inserts). Layers come round in order, so
  // a policy can tell how soon each unit's layer is needed again.
  virtual void on_layer(int layer, bool prefill) {}

  // The next-token predictor's estimates (model/next_expert_predictor.h) that each expert of
  // `layer` is used at the layer's next visits: scores[(s - 1) * n_expert + e] for expert e at
  // the s-th visit from now, s = 1 .. scores.size() / n_expert; comes after the layer's visit
  // (at a deterministic point). A policy that cannot use them ignores them.
  virtual void on_next_visit_scores(int layer, std::span<const float> scores) {}

  // A unit became resident. `scan` marks units streamed for a prompt (prefill): a policy
  // should let them go before the units the conversation keeps using.
  virtual void on_insert(uint32_t unit, bool scan) = 0;
  // A resident unit was used again.
  virtual void on_access(uint32_t unit) = 0;
  // A unit left (evicted or dropped).
  virtual void on_remove(uint32_t unit) = 0;
  // The unit to evict among the resident ones for which `evictable` is true; nullopt if none.
  virtual std::optional<uint32_t> victim(const std::function<bool(uint32_t)>& evictable) = 0;
};

// What a policy may know of its cache: the number of slots (ARC sizes its ghost lists with it)
// and the shape of the units (next-use counts layers).
struct PolicyShape {
  size_t capacity = 0;
  int n_layer = 0;
  int n_expert = 0;
};

// "lru", "lfu", "arc" (or any other name make_policy lists).
Result<std::unique_ptr<ReplacementPolicy>> make_policy(std::string_view name,
                                                       const PolicyShape& shape);
std::vector<std::string_view> policy_names();
// The bytes of a policy's one table that grows faster than the units do: the successor
// policy's n_layer x n_expert^2 counts (experts/successor_ranks.h; 3 MiB at 48 x 128), which the
// memory plan lists. 0 for the other policies, whose state is a few words per unit.
uint64_t policy_table_bytes(std::string_view name, int n_layer, int n_expert);

}  // namespace strata
