#include "experts/lru_policy.h"

#include <gtest/gtest.h>

#include <map>

#include "experts/replacement_policy_test_util.h"

namespace strata {
namespace {

using testing::drive;
using testing::Outcome;
using testing::Request;

// LRU by timestamps: a use stamps the unit with a rising clock; a scan insert stamps it below
// every stamp given so far (a falling negative clock). The victim is the smallest stamp.
class ReferenceLru final : public ReplacementPolicy {
 public:
  void on_insert(uint32_t unit, bool scan) override { stamp_[unit] = scan ? --cold_ : ++hot_; }
  void on_access(uint32_t unit) override { stamp_.at(unit) = ++hot_; }
  void on_remove(uint32_t unit) override { stamp_.erase(unit); }
  std::optional<uint32_t> victim(const std::function<bool(uint32_t)>& evictable) override {
    std::optional<uint32_t> best;
    for (const auto& [unit, stamp] : stamp_)
      if (evictable(unit) && (!best || stamp < stamp_.at(*best))) best = unit;
    return best;
  }

 private:
  std::map<uint32_t, int64_t> stamp_;
  int64_t hot_ = 0, cold_ = 0;
};

void expect_same_as_reference(const std::vector<Request>& requests, uint32_t n_unit,
                              size_t capacity) {
  LruPolicy policy;
  ReferenceLru reference;
  std::vector<bool> resident(n_unit), reference_resident(n_unit);
  for (size_t i = 0; i < requests.size(); ++i) {
    const Outcome got = drive(policy, resident, capacity, requests[i]);
    const Outcome want = drive(reference, reference_resident, capacity, requests[i]);
    ASSERT_EQ(got, want) << "request " << i << " capacity " << capacity;
  }
}

TEST(LruPolicy, MatchesReferenceOnEveryShortTrace) {
  for (size_t capacity = 1; capacity <= 3; ++capacity)
    testing::for_each_sequence(4, 6, true, [&](const std::vector<Request>& requests) {
      expect_same_as_reference(requests, 4, capacity);
    });
}

TEST(LruPolicy, MatchesReferenceWithPinsAndDrops) {
  for (uint32_t seed = 0; seed < 300; ++seed)
    expect_same_as_reference(testing::random_requests(10, 400, seed), 10, 1 + seed % 8);
}

TEST(LruPolicy, EvictsLeastRecentlyUsed) {
  LruPolicy policy;
  for (uint32_t unit : {1, 2, 3}) policy.on_insert(unit, false);
  policy.on_access(1);
  EXPECT_EQ(policy.victim([](uint32_t) { return true; }), 2u);
  EXPECT_EQ(policy.victim([](uint32_t u) { return u != 2; }), 3u);
  EXPECT_EQ(policy.victim([](uint32_t) { return false; }), std::nullopt);
}

TEST(LruPolicy, ScanUnitsGoFirst) {
  LruPolicy policy;
  policy.on_insert(1, false);
  policy.on_insert(2, true);
  policy.on_insert(3, true);
  EXPECT_EQ(policy.victim([](uint32_t) { return true; }), 3u);
  policy.on_access(3);  // used again: no longer a scan unit
  EXPECT_EQ(policy.victim([](uint32_t) { return true; }), 2u);
  policy.on_remove(2);
  EXPECT_EQ(policy.victim([](uint32_t) { return true; }), 1u);
}

}  // namespace
}  // namespace strata
