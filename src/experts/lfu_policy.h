// Least frequently used with dynamic aging (LFU-DA, Arlitt et al. 2000).
//
// A resident unit's key is  age + uses,  where `uses` counts its accesses since it became
// resident (the insertion is the first) and `age` is the policy's clock at its last access.
// The victim is the evictable unit with the smallest key; among equal keys, the one accessed
// longest ago. When a victim this policy chose is removed, the clock rises to its key. So a unit
// entering now starts level with the weakest survivor, and popularity earned long ago decays:
// a unit used 1000 times early stays only until the clock has climbed those 1000 steps, which it
// does as newer units keep winning slots from each other.
//
// Scan inserts (units streamed for a prompt) count 0 uses: key = age, below every unit that was
// inserted or used normally since the clock last moved, so a long prompt evicts its own units
// first. Uses are forgotten when a unit leaves.
//
// O(log n) per operation; victim() costs one more step per pinned unit it passes over.
// Thread-compatibility: one thread at a time.
#pragma once

#include <set>
#include <tuple>
#include <vector>

#include "experts/replacement_policy.h"

namespace strata {

class LfuPolicy final : public ReplacementPolicy {
 public:
  void on_insert(uint32_t unit, bool scan) override;
  void on_access(uint32_t unit) override;
  void on_remove(uint32_t unit) override;
  std::optional<uint32_t> victim(const std::function<bool(uint32_t)>& evictable) override;

 private:
  struct Entry {
    bool resident = false;
    uint64_t uses = 0;
    uint64_t key = 0;
    uint64_t last_access = 0;  // tick_ at the last insert or access: the tie-break
  };
  // (key, last_access, unit): begin() is the next victim. Ticks are unique, so the unit
  // never decides the order.
  using OrderKey = std::tuple<uint64_t, uint64_t, uint32_t>;

  Entry& resident_entry(uint32_t unit);
  void place(uint32_t unit, Entry& entry);

  std::vector<Entry> entries_;  // indexed by unit
  std::set<OrderKey> order_;
  uint64_t age_ = 0;
  uint64_t tick_ = 0;
  std::optional<uint32_t> last_victim_;
};

}  // namespace strata
