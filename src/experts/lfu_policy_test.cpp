#include "experts/lfu_policy.h"

#include <gtest/gtest.h>

#include <map>

#include "experts/replacement_policy_test_util.h"

namespace strata {
namespace {

using testing::drive;
using testing::Outcome;
using testing::Request;

// LFU-DA written from its definition, searching every resident unit for the victim.
class ReferenceLfu final : public ReplacementPolicy {
 public:
  void on_insert(uint32_t unit, bool scan) override {
    units_[unit] = {scan ? 0u : 1u, 0, 0};
    touch(unit);
  }
  void on_access(uint32_t unit) override {
    ++units_.at(unit).uses;
    touch(unit);
  }
  void on_remove(uint32_t unit) override {
    if (chosen_ == unit && units_.at(unit).key > age_) age_ = units_.at(unit).key;
    chosen_.reset();
    units_.erase(unit);
  }
  std::optional<uint32_t> victim(const std::function<bool(uint32_t)>& evictable) override {
    chosen_.reset();
    for (const auto& [unit, state] : units_) {
      if (!evictable(unit)) continue;
      const State& best = chosen_ ? units_.at(*chosen_) : state;
      if (!chosen_ || state.key < best.key || (state.key == best.key && state.time < best.time))
        chosen_ = unit;
    }
    return chosen_;
  }

 private:
  struct State {
    uint64_t uses, key, time;
  };
  void touch(uint32_t unit) {
    units_[unit].key = age_ + units_[unit].uses;
    units_[unit].time = ++clock_;
  }
  std::map<uint32_t, State> units_;
  uint64_t age_ = 0, clock_ = 0;
  std::optional<uint32_t> chosen_;
};

void expect_same_as_reference(const std::vector<Request>& requests, uint32_t n_unit,
                              size_t capacity) {
  LfuPolicy policy;
  ReferenceLfu reference;
  std::vector<bool> resident(n_unit), reference_resident(n_unit);
  for (size_t i = 0; i < requests.size(); ++i) {
    const Outcome got = drive(policy, resident, capacity, requests[i]);
    const Outcome want = drive(reference, reference_resident, capacity, requests[i]);
    ASSERT_EQ(got, want) << "request " << i << " capacity " << capacity;
  }
}

TEST(LfuPolicy, MatchesReferenceOnEveryShortTrace) {
  for (size_t capacity = 1; capacity <= 3; ++capacity)
    testing::for_each_sequence(4, 6, true, [&](const std::vector<Request>& requests) {
      expect_same_as_reference(requests, 4, capacity);
    });
}

TEST(LfuPolicy, MatchesReferenceWithPinsAndDrops) {
  for (uint32_t seed = 0; seed < 300; ++seed)
    expect_same_as_reference(testing::random_requests(10, 400, seed), 10, 1 + seed % 8);
}

TEST(LfuPolicy, KeepsTheFrequentUnitAndBreaksTiesByRecency) {
  LfuPolicy policy;
  for (uint32_t unit : {1, 2, 3}) policy.on_insert(unit, false);
  policy.on_access(1);
  policy.on_access(1);
  EXPECT_EQ(policy.victim([](uint32_t) { return true; }), 2u);  // 2 and 3 used once; 2 first
  policy.on_access(2);
  EXPECT_EQ(policy.victim([](uint32_t) { return true; }), 3u);
  EXPECT_EQ(policy.victim([](uint32_t u) { return u != 3; }), 2u);
}

TEST(LfuPolicy, OldPopularityDecays) {
  // Unit 0 is used 5 times, then a stream of units that are each used twice takes the other
  // slot in turn. Every eviction raises the clock to the victim's key, so each newcomer starts
  // higher, and after a few rounds the newcomer outranks the stale unit 0.
  LfuPolicy policy;
  policy.on_insert(0, false);
  for (int i = 0; i < 4; ++i) policy.on_access(0);
  policy.on_insert(1, false);
  policy.on_access(1);
  uint32_t newest = 1;
  bool stale_evicted = false;
  for (uint32_t next = 2; next < 10 && !stale_evicted; ++next) {
    const auto victim = policy.victim([](uint32_t) { return true; });
    ASSERT_TRUE(victim.has_value());
    stale_evicted = *victim == 0;
    policy.on_remove(*victim);
    policy.on_insert(next, false);
    policy.on_access(next);
    newest = next;
  }
  EXPECT_TRUE(stale_evicted);
  EXPECT_LE(newest, 5u);
}

TEST(LfuPolicy, ScanUnitsGoBeforeUsedOnes) {
  LfuPolicy policy;
  policy.on_insert(1, false);
  policy.on_insert(2, true);
  policy.on_insert(3, true);
  EXPECT_EQ(policy.victim([](uint32_t) { return true; }), 2u);
  policy.on_access(2);
  policy.on_access(2);
  EXPECT_EQ(policy.victim([](uint32_t) { return true; }), 3u);
}

}  // namespace
}  // namespace strata
