// Which resident expert unit the arena evicts when it needs a slot. Units are numbered
// layer * n_expert + expert. The arena and `strata cachesim` use the same implementations.
//
// Thread-compatibility: one thread at a time (the arena calls it under its lock).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include <strata/status.h>

namespace strata {

class ReplacementPolicy {
 public:
  virtual ~ReplacementPolicy() = default;

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

// "lru", "lfu", "arc" (or any other name make_policy lists); capacity is the number of
// slots (ARC sizes its ghost lists with it).
Result<std::unique_ptr<ReplacementPolicy>> make_policy(std::string_view name, size_t capacity);
std::vector<std::string_view> policy_names();

}  // namespace strata
