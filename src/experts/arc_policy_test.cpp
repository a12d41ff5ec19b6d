#include "experts/arc_policy.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "experts/replacement_policy_test_util.h"

namespace strata {
namespace {

using testing::drive;
using testing::Outcome;
using testing::Request;

// ARC in the shape of the paper's pseudo-code (request -> cases I..IV, lists as vectors from
// LRU to MRU), with the documented changes of ArcPolicy: REPLACE ignores whether the missing
// unit is a B2 ghost and runs only when the cache is full, p adapts after it, scan units enter
// T1 at its LRU end without adapting p, and a drop demotes a unit to its ghost list.
class ReferenceArc {
 public:
  explicit ReferenceArc(size_t c) : c_(c) {}

  Outcome request(const Request& r) {
    const uint32_t x = r.unit;
    Outcome outcome;
    if (r.drop) {
      if (erase(t1_, x)) b1_.push_back(x);
      if (erase(t2_, x)) b2_.push_back(x);
      return outcome;
    }
    if (erase(t1_, x) || erase(t2_, x)) {  // case I
      t2_.push_back(x);
      outcome.hit = true;
      return outcome;
    }
    const auto evictable = [&](uint32_t u) { return !(u < 32 && (r.pinned >> u & 1)) && u != x; };
    const bool full = t1_.size() + t2_.size() == c_;
    if (full) {
      outcome.victim = replace_choice(evictable);
      if (!outcome.victim) return outcome;
    }
    if (r.scan) {
      erase(b1_, x);
      erase(b2_, x);
      case_four(outcome.victim);
      t1_.insert(t1_.begin(), x);
    } else if (contains(b1_, x)) {  // case II
      evict(outcome.victim);
      p_ = std::min(c_, p_ + std::max<size_t>(1, b2_.size() / b1_.size()));
      erase(b1_, x);
      t2_.push_back(x);
    } else if (contains(b2_, x)) {  // case III
      evict(outcome.victim);
      p_ -= std::min(p_, std::max<size_t>(1, b1_.size() / b2_.size()));
      erase(b2_, x);
      t2_.push_back(x);
    } else {  // case IV
      case_four(outcome.victim);
      t1_.push_back(x);
    }
    outcome.inserted = true;
    return outcome;
  }

 private:
  using List = std::vector<uint32_t>;
  static bool contains(const List& list, uint32_t u) {
    return std::find(list.begin(), list.end(), u) != list.end();
  }
  static bool erase(List& list, uint32_t u) {
    const auto it = std::find(list.begin(), list.end(), u);
    if (it == list.end()) return false;
    list.erase(it);
    return true;
  }
  template <class F>
  std::optional<uint32_t> replace_choice(const F& evictable) const {
    const bool from_t1 = t1_.size() > p_;
    for (const List* list : {from_t1 ? &t1_ : &t2_, from_t1 ? &t2_ : &t1_})
      for (uint32_t u : *list)
        if (evictable(u)) return u;
    return std::nullopt;
  }
  // REPLACE: the victim becomes the MRU ghost of its list.
  void evict(std::optional<uint32_t> victim) {
    if (!victim) return;
    if (erase(t1_, *victim)) b1_.push_back(*victim);
    if (erase(t2_, *victim)) b2_.push_back(*victim);
  }
  // Case IV, up to inserting the new unit: ghost deletions, then REPLACE.
  void case_four(std::optional<uint32_t> victim) {
    if (t1_.size() + b1_.size() == c_) {
      if (b1_.empty()) {  // T1 alone fills L1: its LRU (evictable) goes without a ghost
        erase(t1_, *victim);
        return;
      }
      b1_.erase(b1_.begin());
    } else if (t1_.size() + t2_.size() + b1_.size() + b2_.size() == 2 * c_) {
      b2_.erase(b2_.begin());
    }
    evict(victim);
  }

  size_t c_, p_ = 0;
  List t1_, t2_, b1_, b2_;
};

void expect_same_as_reference(const std::vector<Request>& requests, uint32_t n_unit,
                              size_t capacity) {
  ArcPolicy policy(capacity);
  ReferenceArc reference(capacity);
  std::vector<bool> resident(n_unit);
  for (size_t i = 0; i < requests.size(); ++i) {
    const Outcome got = drive(policy, resident, capacity, requests[i]);
    const Outcome want = reference.request(requests[i]);
    ASSERT_EQ(got, want) << "request " << i << " capacity " << capacity;
  }
}

TEST(ArcPolicy, MatchesReferenceOnEveryShortTrace) {
  for (size_t capacity = 1; capacity <= 3; ++capacity)
    testing::for_each_sequence(4, 6, true, [&](const std::vector<Request>& requests) {
      expect_same_as_reference(requests, 4, capacity);
    });
  for (size_t capacity = 2; capacity <= 3; ++capacity)
    testing::for_each_sequence(5, 8, false, [&](const std::vector<Request>& requests) {
      expect_same_as_reference(requests, 5, capacity);
    });
}

TEST(ArcPolicy, MatchesReferenceWithPinsAndDrops) {
  for (uint32_t seed = 0; seed < 300; ++seed)
    expect_same_as_reference(testing::random_requests(10, 400, seed), 10, 1 + seed % 8);
}

TEST(ArcPolicy, OneTimeUnitsDoNotFlushRepeatedOnes) {
  // Units 0 and 1 are used twice (T2); a long run of one-time units cycles through T1 only.
  ArcPolicy policy(4);
  std::vector<bool> resident(64);
  for (uint32_t unit : {0u, 1u, 0u, 1u}) drive(policy, resident, 4, Request{unit});
  for (uint32_t unit = 2; unit < 64; ++unit) drive(policy, resident, 4, Request{unit});
  EXPECT_TRUE(resident[0]);
  EXPECT_TRUE(resident[1]);
}

TEST(ArcPolicy, GhostHitInB1GrowsTheRecentSide) {
  // T2 = {0, 1}; unit 2 passes through T1 and is evicted to B1 by 3. When 2 returns (a B1 ghost
  // hit), p grows to 1, so with T1 = {4} the next victim comes from T2. Had 2 not been a ghost
  // (unit 6 instead), p would still be 0 and T1's unit 4 would go.
  for (const bool ghost_hit : {true, false}) {
    ArcPolicy policy(3);
    std::vector<bool> resident(8);
    for (uint32_t unit : {0u, 0u, 1u, 1u, 2u, 3u, ghost_hit ? 2u : 6u, 4u})
      drive(policy, resident, 3, Request{unit});
    EXPECT_EQ(drive(policy, resident, 3, Request{5}).victim, ghost_hit ? 1u : 4u);
  }
}

}  // namespace
}  // namespace strata
