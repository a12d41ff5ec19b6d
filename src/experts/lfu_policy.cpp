#include "experts/lfu_policy.h"

#include <algorithm>

#include "base/check.h"
#include "experts/unit_list.h"

namespace strata {

LfuPolicy::Entry& LfuPolicy::resident_entry(uint32_t unit) {
  STRATA_CHECK(unit < entries_.size() && entries_[unit].resident);
  return entries_[unit];
}

// Sets the entry's key from its uses and the current clock, and files it in order_.
void LfuPolicy::place(uint32_t unit, Entry& entry) {
  entry.key = age_ + entry.uses;
  entry.last_access = ++tick_;
  order_.emplace(entry.key, entry.last_access, unit);
}

void LfuPolicy::on_insert(uint32_t unit, bool scan) {
  STRATA_CHECK_LT(unit, UnitList::kMaxUnits);
  if (unit >= entries_.size()) entries_.resize(size_t(unit) + 1);
  Entry& entry = entries_[unit];
  STRATA_CHECK(!entry.resident);
  entry.resident = true;
  entry.uses = scan ? 0 : 1;
  place(unit, entry);
}

void LfuPolicy::on_access(uint32_t unit) {
  Entry& entry = resident_entry(unit);
  order_.erase({entry.key, entry.last_access, unit});
  ++entry.uses;
  place(unit, entry);
}

void LfuPolicy::on_remove(uint32_t unit) {
  Entry& entry = resident_entry(unit);
  order_.erase({entry.key, entry.last_access, unit});
  // Only the policy's own choices move the clock: dropping a unit the arena no longer wants
  // says nothing about how popular the survivors are.
  if (last_victim_ == unit) age_ = std::max(age_, entry.key);
  last_victim_.reset();
  entry = Entry();
}

std::optional<uint32_t> LfuPolicy::victim(const std::function<bool(uint32_t)>& evictable) {
  last_victim_.reset();
  for (const auto& [key, last_access, unit] : order_) {
    if (evictable(unit)) {
      last_victim_ = unit;
      break;
    }
  }
  return last_victim_;
}

}  // namespace strata
