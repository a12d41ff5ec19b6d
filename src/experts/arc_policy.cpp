#include "experts/arc_policy.h"

#include <algorithm>

#include "base/check.h"

namespace strata {

ArcPolicy::ArcPolicy(size_t capacity) : capacity_(capacity) { STRATA_CHECK(capacity >= 1); }

void ArcPolicy::on_insert(uint32_t unit, bool scan) {
  STRATA_CHECK(!t1_.contains(unit) && !t2_.contains(unit));
  if (scan) {
    if (b1_.contains(unit)) b1_.remove(unit);
    if (b2_.contains(unit)) b2_.remove(unit);
    t1_.push_cold(unit);
  } else if (b1_.contains(unit)) {
    // Recency would have kept it: give T1 more room.
    p_ = std::min(capacity_, p_ + std::max<size_t>(1, b2_.size() / b1_.size()));
    b1_.remove(unit);
    t2_.push_hot(unit);
  } else if (b2_.contains(unit)) {
    // Frequency would have kept it: give T2 more room.
    p_ -= std::min(p_, std::max<size_t>(1, b1_.size() / b2_.size()));
    b2_.remove(unit);
    t2_.push_hot(unit);
  } else {
    t1_.push_hot(unit);
  }
  trim_ghosts();
}

void ArcPolicy::on_access(uint32_t unit) {
  if (t1_.contains(unit))
    t1_.remove(unit);
  else
    t2_.remove(unit);
  t2_.push_hot(unit);
}

void ArcPolicy::on_remove(uint32_t unit) {
  if (t1_.contains(unit)) {
    t1_.remove(unit);
    b1_.push_hot(unit);
  } else {
    t2_.remove(unit);
    b2_.push_hot(unit);
  }
  trim_ghosts();
}

void ArcPolicy::trim_ghosts() {
  while (t1_.size() + b1_.size() > capacity_ && !b1_.empty()) b1_.remove(b1_.coldest());
  while (t1_.size() + t2_.size() + b1_.size() + b2_.size() > 2 * capacity_ && !b2_.empty())
    b2_.remove(b2_.coldest());
}

std::optional<uint32_t> ArcPolicy::victim(const std::function<bool(uint32_t)>& evictable) {
  const bool from_recent = t1_.size() > p_;
  const UnitList& first = from_recent ? t1_ : t2_;
  const UnitList& second = from_recent ? t2_ : t1_;
  if (auto unit = first.coldest_where(evictable)) return unit;
  return second.coldest_where(evictable);
}

}  // namespace strata
