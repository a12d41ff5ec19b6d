#include "experts/lrfu_policy.h"

#include <algorithm>
#include <cmath>

#include "base/check.h"
#include "experts/unit_list.h"

namespace strata {

LrfuPolicy::LrfuPolicy(double half_life) : half_life_(half_life) { STRATA_CHECK(half_life > 0); }

LrfuPolicy::Entry& LrfuPolicy::resident_entry(uint32_t unit) {
  STRATA_CHECK(unit < entries_.size() && entries_[unit].resident);
  return entries_[unit];
}

// log2(2^w + 2^x) with x = now / half_life, computed without overflow.
void LrfuPolicy::add_use(Entry& entry) const {
  const double now = double(tick_) / half_life_;
  if (std::isinf(entry.log_weight)) {
    entry.log_weight = now;
    return;
  }
  const double high = std::max(entry.log_weight, now), low = std::min(entry.log_weight, now);
  entry.log_weight = high + std::log2(1.0 + std::exp2(low - high));
}

void LrfuPolicy::on_insert(uint32_t unit, bool scan) {
  STRATA_CHECK_LT(unit, UnitList::kMaxUnits);
  if (unit >= entries_.size()) entries_.resize(size_t(unit) + 1);
  Entry& entry = entries_[unit];
  STRATA_CHECK(!entry.resident);
  entry.resident = true;
  ++tick_;
  if (!scan) add_use(entry);
  entry.last_access = tick_;
  order_.emplace(entry.log_weight, entry.last_access, unit);
}

void LrfuPolicy::on_access(uint32_t unit) {
  Entry& entry = resident_entry(unit);
  order_.erase({entry.log_weight, entry.last_access, unit});
  ++tick_;
  add_use(entry);
  entry.last_access = tick_;
  order_.emplace(entry.log_weight, entry.last_access, unit);
}

void LrfuPolicy::on_remove(uint32_t unit) {
  Entry& entry = resident_entry(unit);
  order_.erase({entry.log_weight, entry.last_access, unit});
  entry.resident = false;  // the weight stays: it is the history that helps next time
}

std::optional<uint32_t> LrfuPolicy::victim(const std::function<bool(uint32_t)>& evictable) {
  for (const auto& [log_weight, last_access, unit] : order_)
    if (evictable(unit)) return unit;
  return std::nullopt;
}

}  // namespace strata
