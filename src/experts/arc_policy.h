// Adaptive Replacement Cache (Megiddo & Modha, FAST 2003) over a cache of `capacity` units.
//
// Resident units are in T1 (used once since they entered) or T2 (used again); B1 and B2 remember
// the units recently evicted from T1 and T2 (ghosts, no data). The target size p of T1 grows on
// a miss that hits a B1 ghost and shrinks on a miss that hits a B2 ghost, by max(1, |other
// ghost list| / |this ghost list|) in integer arithmetic. Ghosts are trimmed from the cold end
// so that |T1| + |B1| <= capacity and |T1| + |T2| + |B1| + |B2| <= 2 * capacity.
//
// Two differences from the paper, both forced by the arena asking for a victim before it
// inserts the missing unit (victim(), on_remove(), then on_insert()):
//  * p adapts in on_insert(), one eviction after the paper would;
//  * the victim comes from T1 when |T1| > p (the paper also takes it from T1 when |T1| == p and
//    the missing unit is a B2 ghost, which victim() cannot know). When the chosen list holds no
//    evictable unit, the other list gives one.
// With every slot evictable and no drops, hits and victims otherwise follow the paper.
//
// Scan inserts (units streamed for a prompt) enter T1 at its cold end and never adapt p; a
// ghost of the unit is forgotten. A prompt's one pass over many units then replaces mostly its
// own units, leaves T2 (the units used repeatedly) alone, and teaches ARC nothing about the
// balance of recency and frequency. A scan unit used again moves to T2 like any other.
//
// O(1) per operation; victim() costs one more step per pinned unit it passes over.
// Thread-compatibility: one thread at a time.
#pragma once

#include "experts/replacement_policy.h"
#include "experts/unit_list.h"

namespace strata {

class ArcPolicy final : public ReplacementPolicy {
 public:
  // REQUIRES: capacity >= 1
  explicit ArcPolicy(size_t capacity);

  void on_insert(uint32_t unit, bool scan) override;
  void on_access(uint32_t unit) override;
  void on_remove(uint32_t unit) override;
  std::optional<uint32_t> victim(const std::function<bool(uint32_t)>& evictable) override;

 private:
  void trim_ghosts();

  size_t capacity_;
  size_t p_ = 0;  // target size of T1
  UnitList t1_, t2_, b1_, b2_;
};

}  // namespace strata
