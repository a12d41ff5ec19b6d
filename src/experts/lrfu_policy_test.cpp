#include "experts/lrfu_policy.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "experts/lru_policy.h"
#include "experts/replacement_policy_test_util.h"

namespace strata {
namespace {

using testing::drive;
using testing::Request;

// Forwards to an LrfuPolicy and checks each victim against the definition: the weight of every
// unit, sum over its uses of 2^-(age / half_life), computed from the list of its use times.
class CheckedLrfu final : public ReplacementPolicy {
 public:
  explicit CheckedLrfu(double half_life) : policy_(half_life), half_life_(half_life) {}

  void on_insert(uint32_t unit, bool scan) override {
    ++clock_;
    if (!scan) uses_[unit].push_back(clock_);
    last_[unit] = clock_;
    resident_[unit] = true;
    policy_.on_insert(unit, scan);
  }
  void on_access(uint32_t unit) override {
    ++clock_;
    uses_[unit].push_back(clock_);
    last_[unit] = clock_;
    policy_.on_access(unit);
  }
  void on_remove(uint32_t unit) override {
    resident_[unit] = false;
    policy_.on_remove(unit);
  }
  std::optional<uint32_t> victim(const std::function<bool(uint32_t)>& evictable) override {
    const auto chosen = policy_.victim(evictable);
    std::optional<uint32_t> lightest;
    for (const auto& [unit, resident] : resident_) {
      if (!resident || !evictable(unit)) continue;
      if (!lightest || weight(unit) < weight(*lightest) ||
          (weight(unit) == weight(*lightest) && last_[unit] < last_[*lightest]))
        lightest = unit;
    }
    EXPECT_EQ(chosen.has_value(), lightest.has_value());
    if (chosen && lightest && *chosen != *lightest) {
      // Only a near-tie may be ordered differently (the policy sums in the log domain).
      EXPECT_NEAR(weight(*chosen), weight(*lightest), 1e-9 * weight(*lightest))
          << "chose " << *chosen << " but " << *lightest << " is lighter";
      EXPECT_GT(weight(*lightest), 0.0) << "ties of unused units go to the older";
    }
    return chosen;
  }

 private:
  long double weight(uint32_t unit) const {
    long double sum = 0;
    const auto it = uses_.find(unit);
    if (it != uses_.end())
      for (uint64_t t : it->second) sum += std::exp2l(-(long double)(clock_ - t) / half_life_);
    return sum;
  }

  LrfuPolicy policy_;
  double half_life_;
  uint64_t clock_ = 0;
  std::map<uint32_t, std::vector<uint64_t>> uses_;
  std::map<uint32_t, uint64_t> last_;
  std::map<uint32_t, bool> resident_;
};

TEST(LrfuPolicy, VictimsAreTheLightestOnEveryShortTrace) {
  for (double half_life : {0.5, 3.0})
    for (size_t capacity = 1; capacity <= 3; ++capacity)
      testing::for_each_sequence(4, 6, true, [&](const std::vector<Request>& requests) {
        CheckedLrfu policy(half_life);
        std::vector<bool> resident(4);
        for (const Request& r : requests) drive(policy, resident, capacity, r);
      });
}

TEST(LrfuPolicy, VictimsAreTheLightestWithPinsAndDrops) {
  for (uint32_t seed = 0; seed < 200; ++seed) {
    CheckedLrfu policy(1.0 + seed % 40);
    std::vector<bool> resident(10);
    for (const Request& r : testing::random_requests(10, 400, seed))
      drive(policy, resident, 1 + seed % 8, r);
  }
}

TEST(LrfuPolicy, AShortHalfLifeIsLru) {
  for (uint32_t seed = 0; seed < 100; ++seed) {
    LrfuPolicy lrfu(0.01);
    LruPolicy lru;
    std::vector<bool> lrfu_resident(10), lru_resident(10);
    for (Request r : testing::random_requests(10, 300, seed)) {
      r.scan = false;  // the two differ on purpose there
      ASSERT_EQ(drive(lrfu, lrfu_resident, 4, r), drive(lru, lru_resident, 4, r)) << seed;
    }
  }
}

TEST(LrfuPolicy, RemembersUnitsItEvicted) {
  // Unit 0 is used 5 times and evicted while pinned units take the cache; when it returns it
  // outranks unit 1, used once more recently.
  LrfuPolicy policy(1000);
  policy.on_insert(0, false);
  for (int i = 0; i < 4; ++i) policy.on_access(0);
  policy.on_remove(0);
  policy.on_insert(1, false);
  policy.on_insert(0, false);
  EXPECT_EQ(policy.victim([](uint32_t) { return true; }), 1u);
}

TEST(LrfuPolicy, ScanUnitsAddNoWeight) {
  LrfuPolicy policy(1000);
  policy.on_insert(1, false);
  policy.on_insert(2, true);
  policy.on_insert(3, true);
  EXPECT_EQ(policy.victim([](uint32_t) { return true; }), 2u);  // unused: the older goes first
  policy.on_access(3);
  EXPECT_EQ(policy.victim([](uint32_t) { return true; }), 2u);
  policy.on_access(2);
  policy.on_access(2);
  EXPECT_EQ(policy.victim([](uint32_t) { return true; }), 1u);
}

}  // namespace
}  // namespace strata
