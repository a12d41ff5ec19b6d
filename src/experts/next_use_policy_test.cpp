#include "experts/next_use_policy.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

namespace strata {
namespace {

constexpr int kExperts = 4;

// Two layers, the units of layer 0 resident. Each visit of layer 0 uses expert x (0 or 1, at
// random) and expert 2 + (the previous visit's x): the history of experts 2 and 3 says nothing
// of which comes next, the experts of the visit before say it all. Counts, over the visits
// after the first `warm_up`, how often the policy chose the one of 2 and 3 not needed next as
// the victim, and sums the use probability it gave the one needed.
struct Outcome {
  int right_victims = 0;
  double needed_probability = 0;
};

// `predictor`: after each visit of layer 0 the policy hears estimates that say which of 2 and 3
// the next visit needs (0.9 against 0.1), as a next-token predictor would.
Outcome replay(NextUsePolicy& policy, int warm_up, int n_visits, bool predictor = false) {
  for (int e = 0; e < kExperts; ++e) policy.on_insert(uint32_t(e), /*scan=*/true);
  std::mt19937 rng(7);
  int previous = 0;
  Outcome outcome;
  for (int v = 0; v < n_visits; ++v) {
    const int x = int(rng() % 2);
    if (v >= warm_up) {
      const uint32_t needed = uint32_t(2 + previous);
      outcome.right_victims += *policy.victim([](uint32_t u) { return u >= 2; }) != needed;
      outcome.needed_probability += policy.use_probability(needed);
    }
    policy.on_layer(0, false);
    policy.on_access(uint32_t(x));
    policy.on_access(uint32_t(2 + previous));
    if (predictor) {
      float scores[kExperts] = {0.5f, 0.5f, 0.1f, 0.1f};
      scores[2 + x] = 0.9f;
      policy.on_next_visit_scores(0, scores);
    }
    policy.on_layer(1, false);  // learns from layer 0's visit
    previous = x;
  }
  return outcome;
}

TEST(NextUsePolicy, SuccessorRanksTellWhichExpertFollows) {
  NextUsePolicy policy(2, kExperts, NextUsePolicy::Signal::kSuccessors);
  const Outcome outcome = replay(policy, 300, 500);
  EXPECT_GE(outcome.right_victims, 190);
  EXPECT_GT(outcome.needed_probability / 200, 0.8);
}

TEST(NextUsePolicy, WithoutSuccessorRanksTheHistoryAloneCannotTell) {
  NextUsePolicy policy(2, kExperts, NextUsePolicy::Signal::kHistory);
  const Outcome outcome = replay(policy, 300, 500);
  EXPECT_LE(outcome.right_victims, 140);
  EXPECT_NEAR(outcome.needed_probability / 200, 0.5, 0.1);
}

TEST(NextUsePolicy, PredictorEstimatesTellWhichExpertFollows) {
  NextUsePolicy policy(2, kExperts, NextUsePolicy::Signal::kPredictor);
  const Outcome outcome = replay(policy, 300, 500, /*predictor=*/true);
  EXPECT_EQ(outcome.right_victims, 200);
  // q is the mean of the estimate (0.9) and the history's rate (about one half).
  EXPECT_NEAR(outcome.needed_probability / 200, 0.7, 0.05);
}

TEST(NextUsePolicy, EstimatesForLaterVisitsKeepTheUnitNeededSooner) {
  for (const uint32_t later : {2u, 3u}) {
    NextUsePolicy policy(2, kExperts, NextUsePolicy::Signal::kPredictor);
    for (int e = 0; e < kExperts; ++e) policy.on_insert(uint32_t(e), /*scan=*/true);
    policy.on_layer(0, false);
    policy.on_access(0);
    policy.on_access(1);
    // Neither 2 nor 3 is likely at layer 0's next visit; `later` is at the one after.
    float scores[2 * kExperts] = {0.5f, 0.5f, 0.1f, 0.1f, 0.5f, 0.5f, 0.1f, 0.1f};
    scores[kExperts + later] = 0.9f;
    policy.on_next_visit_scores(0, scores);
    policy.on_layer(1, false);
    const uint32_t other = later == 2 ? 3 : 2;
    EXPECT_LT(policy.expected_next_use(later), policy.expected_next_use(other));
    EXPECT_EQ(*policy.victim([](uint32_t u) { return u >= 2; }), other);
  }
}

TEST(NextUsePolicy, OtherPoliciesIgnorePredictorEstimates) {
  NextUsePolicy policy(2, kExperts, NextUsePolicy::Signal::kHistory);
  const Outcome outcome = replay(policy, 300, 500, /*predictor=*/true);
  EXPECT_LE(outcome.right_victims, 140);
}

TEST(NextUsePolicy, APromptChunkBreaksTheSuccession) {
  NextUsePolicy policy(2, kExperts, NextUsePolicy::Signal::kSuccessors);
  replay(policy, 500, 500);
  EXPECT_GT(std::max(policy.use_probability(2), policy.use_probability(3)), 0.8);
  policy.on_layer(0, /*prefill=*/true);
  policy.on_layer(1, false);
  // The next visit does not follow a token's visit: back to the history alone, which cannot
  // tell expert 2 from 3.
  EXPECT_NEAR(policy.use_probability(2), 0.5, 0.2);
  EXPECT_NEAR(policy.use_probability(3), 0.5, 0.2);
}

// victim() keeps each resident unit's E beside it, from pairs refreshed as layers come and go
// (or from the predictor's estimates): whatever it keeps, its choice must be the largest E of
// expected_next_use() among the evictable units, the least recently touched among equals.
TEST(NextUsePolicy, VictimIsTheEvictableUnitWithTheLargestExpectedNextUse) {
  constexpr int kLayers = 3, kWide = 16, kCapacity = 20;
  for (const auto signal : {NextUsePolicy::Signal::kHistory, NextUsePolicy::Signal::kSuccessors,
                            NextUsePolicy::Signal::kPredictor}) {
    NextUsePolicy policy(kLayers, kWide, signal);
    std::mt19937 rng(3);
    std::vector<uint32_t> resident;
    std::vector<uint64_t> touched(size_t(kLayers * kWide), 0);
    uint64_t tick = 0;
    int checked = 0;
    for (int visit = 0; visit < 600; ++visit) {
      const int layer = visit % kLayers;
      const bool prefill = rng() % 10 == 0;
      policy.on_layer(layer, prefill);
      for (int pick = 0; pick < 4; ++pick) {
        const uint32_t unit = uint32_t(layer * kWide + int(rng() % 6 + (rng() % 2) * (rng() % 10)));
        touched[unit] = ++tick;
        if (std::find(resident.begin(), resident.end(), unit) != resident.end()) {
          policy.on_access(unit);
          continue;
        }
        if (resident.size() == size_t(kCapacity)) {
          auto evictable = [&](uint32_t u) { return u % 3 != uint32_t(visit % 3); };
          const std::optional<uint32_t> chosen = policy.victim(evictable);
          std::optional<uint32_t> best;
          for (uint32_t u : resident) {
            if (!evictable(u)) continue;
            const double e = policy.expected_next_use(u),
                         b = best ? policy.expected_next_use(*best) : 0;
            if (!best || e > b || (e == b && touched[u] < touched[*best])) best = u;
          }
          ASSERT_EQ(chosen, best) << "visit " << visit;
          ++checked;
          policy.on_remove(*chosen);
          resident.erase(std::find(resident.begin(), resident.end(), *chosen));
        }
        policy.on_insert(unit, prefill);
        resident.push_back(unit);
      }
      if (signal == NextUsePolicy::Signal::kPredictor && !prefill) {
        std::vector<float> scores(static_cast<size_t>(kWide));
        for (float& score : scores) score = float(rng() % 100) / 100.0f;
        policy.on_next_visit_scores(layer, scores);
      }
    }
    EXPECT_GT(checked, 300);
  }
}

}  // namespace
}  // namespace strata
