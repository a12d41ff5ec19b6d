// Least recently used. A unit inserted with `scan` (streamed for a prompt) enters at the cold
// end instead of the hot end: it is the first to go unless it is used again, so one long prompt
// cannot flush the units the conversation keeps using. O(1) per operation; victim() costs one
// more step per pinned unit it passes over.
//
// Thread-compatibility: one thread at a time.
#pragma once

#include "experts/replacement_policy.h"
#include "experts/unit_list.h"

namespace strata {

class LruPolicy final : public ReplacementPolicy {
 public:
  void on_insert(uint32_t unit, bool scan) override;
  void on_access(uint32_t unit) override;
  void on_remove(uint32_t unit) override;
  std::optional<uint32_t> victim(const std::function<bool(uint32_t)>& evictable) override;

 private:
  UnitList resident_;
};

}  // namespace strata
