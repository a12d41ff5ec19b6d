#include "runtime/sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <vector>

namespace strata {
namespace {

TEST(Sampler, GreedyTakesArgmaxAndLowestIdOnTies) {
  SamplerOptions options;
  options.temperature = 0;
  Sampler sampler(options);
  const std::vector<float> logits = {0.5f, 3.0f, -1.0f, 3.0f};
  EXPECT_EQ(sampler.sample(logits, {}), 1);
}

TEST(Sampler, SameSeedSameTokens) {
  SamplerOptions options;
  options.temperature = 1.0f;
  options.seed = 42;
  const std::vector<float> logits = {1.0f, 1.1f, 0.9f, 1.05f, 0.2f};
  Sampler a(options), b(options);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(a.sample(logits, {}), b.sample(logits, {}));
}

TEST(Sampler, DrawFrequenciesFollowSoftmax) {
  SamplerOptions options;
  options.temperature = 1.0f;
  options.top_k = 0;
  options.top_p = 1.0f;
  options.min_p = 0;
  options.seed = 7;
  Sampler sampler(options);
  const std::vector<float> logits = {0.0f, std::log(2.0f), std::log(3.0f)};  // p = 1/6, 2/6, 3/6
  std::map<int32_t, int> counts;
  const int n = 60000;
  for (int i = 0; i < n; ++i) ++counts[sampler.sample(logits, {})];
  // Binomial standard deviation at n = 60000 is below 0.002; 0.01 is five of them.
  EXPECT_NEAR(counts[0] / double(n), 1.0 / 6, 0.01);
  EXPECT_NEAR(counts[1] / double(n), 2.0 / 6, 0.01);
  EXPECT_NEAR(counts[2] / double(n), 3.0 / 6, 0.01);
}

TEST(Sampler, TopKOneIsGreedyWhateverTheTemperature) {
  SamplerOptions options;
  options.temperature = 5.0f;
  options.top_k = 1;
  Sampler sampler(options);
  const std::vector<float> logits = {0.1f, 0.3f, 0.2f};
  for (int i = 0; i < 50; ++i) EXPECT_EQ(sampler.sample(logits, {}), 1);
}

TEST(Sampler, TopKKeepsTheBestAndBreaksTiesTowardsLowerIds) {
  // 1000 logits in three levels; the top 5 are the five lowest ids at the highest level.
  std::vector<float> logits(1000);
  std::vector<int32_t> expected;
  for (size_t i = 0; i < logits.size(); ++i) {
    logits[i] = float((i * 7919) % 3);
    if (logits[i] == 2.0f && expected.size() < 5) expected.push_back(int32_t(i));
  }
  SamplerOptions options;
  options.top_k = 5;
  options.top_p = 1.0f;
  options.min_p = 0.0f;
  options.temperature = 1.0f;
  Sampler sampler(options);
  std::set<int32_t> drawn;
  for (int i = 0; i < 500; ++i) drawn.insert(sampler.sample(logits, {}));
  EXPECT_EQ(drawn, std::set<int32_t>(expected.begin(), expected.end()));
}

TEST(Sampler, TopPKeepsSmallestSetReachingP) {
  SamplerOptions options;
  options.temperature = 1.0f;
  options.top_k = 0;
  options.min_p = 0;
  options.top_p = 0.5f;  // p = {0.6, 0.3, 0.1}: only the first survives
  options.seed = 1;
  Sampler sampler(options);
  const std::vector<float> logits = {std::log(0.6f), std::log(0.3f), std::log(0.1f)};
  for (int i = 0; i < 200; ++i) EXPECT_EQ(sampler.sample(logits, {}), 0);
}

TEST(Sampler, MinPDropsUnlikelyTokens) {
  SamplerOptions options;
  options.temperature = 1.0f;
  options.top_k = 0;
  options.top_p = 1.0f;
  options.min_p = 0.2f;  // threshold 0.2 * 0.7 = 0.14 drops the 0.1 token
  options.seed = 3;
  Sampler sampler(options);
  const std::vector<float> logits = {std::log(0.7f), std::log(0.2f), std::log(0.1f)};
  for (int i = 0; i < 500; ++i) EXPECT_NE(sampler.sample(logits, {}), 2);
}

TEST(Sampler, RepeatPenaltyDividesPositiveAndMultipliesNegativeLogits) {
  SamplerOptions options;
  options.temperature = 0;
  options.repeat_penalty = 2.0f;
  Sampler sampler(options);
  // Token 0 (logit 3) is penalised to 1.5 < 2; token 2 would win only without the penalty.
  const std::vector<float> logits = {3.0f, 2.0f, -1.0f};
  const std::vector<int32_t> recent = {0};
  EXPECT_EQ(sampler.sample(logits, recent), 1);
}

}  // namespace
}  // namespace strata
