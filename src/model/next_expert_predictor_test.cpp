#include "model/next_expert_predictor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "model/model_file_test_support.h"
#include "model/next_expert_predictor_fit.h"

namespace strata {
namespace {

constexpr int64_t kLayers = 2, kEmbd = 6, kExperts = 5;

std::vector<float> random_input(std::mt19937& rng) {
  std::normal_distribution<float> normal;
  std::vector<float> x(static_cast<size_t>(kEmbd));
  for (float& v : x) v = normal(rng);
  return x;
}

// In layer l, the next token picks the expert (largest of x's first five components + l) mod 5
// and always expert 4 - l: a rule a linear score can learn to rank.
std::vector<int32_t> rule(int layer, const std::vector<float>& x) {
  const int32_t largest = int32_t(std::max_element(x.begin(), x.begin() + kExperts) - x.begin());
  const int32_t picked = int32_t((largest + layer) % kExperts), always = int32_t(4 - layer);
  if (picked == always) return {picked};
  return {picked, always};
}

std::vector<float> scores(const NextExpertPredictor& predictor, int layer,
                          const std::vector<float>& x) {
  const Matrix m = predictor.matrix(layer);
  const auto* w = reinterpret_cast<const float*>(m.data);
  std::vector<float> s(static_cast<size_t>(kExperts));
  for (int64_t e = 0; e < kExperts; ++e) {
    s[size_t(e)] = predictor.bias(layer)[size_t(e)];
    for (int64_t i = 0; i < kEmbd; ++i) s[size_t(e)] += w[e * kEmbd + i] * x[size_t(i)];
  }
  return s;
}

class NextExpertPredictorTest : public testing::ScratchDirectoryTest {
 protected:
  std::shared_ptr<const NextExpertPredictor> fitted_and_reloaded() {
    NextExpertPredictorFit fit(kLayers, kEmbd, kExperts);
    std::mt19937 rng(3);
    for (int n = 0; n < 2000; ++n)
      for (int layer = 0; layer < kLayers; ++layer) {
        const auto x = random_input(rng);
        fit.add(layer, x, rule(layer, x));
      }
    const auto solution = fit.solve(NextExpertPredictorFit::kDefaultRidge);
    EXPECT_TRUE(solution.ok()) << solution.status().message();
    if (!solution.ok()) return nullptr;
    const Status written =
        NextExpertPredictor::write(path("p.gguf"), kLayers, kEmbd, kExperts,
                                   solution.value().weights, solution.value().biases, "test");
    EXPECT_TRUE(written.ok()) << written.message();
    auto loaded = NextExpertPredictor::load(path("p.gguf"), kLayers, kEmbd, kExperts);
    EXPECT_TRUE(loaded.ok()) << loaded.status().message();
    return loaded.ok() ? loaded.value() : nullptr;
  }
};

TEST_F(NextExpertPredictorTest, FitRanksTheNextPicksFirstOnNewInputs) {
  const auto predictor = fitted_and_reloaded();
  ASSERT_TRUE(predictor);
  std::mt19937 rng(11);
  int right = 0, total = 0;
  for (int n = 0; n < 200; ++n)
    for (int layer = 0; layer < kLayers; ++layer) {
      const auto x = random_input(rng);
      const auto s = scores(*predictor, layer, x);
      const auto picks = rule(layer, x);
      // The always-picked expert scores near 1, the rule's pick above every expert not picked.
      EXPECT_NEAR(s[size_t(4 - layer)], 1.0, 0.1);
      float best_other = -1e9f;
      for (int32_t e = 0; e < kExperts; ++e)
        if (std::find(picks.begin(), picks.end(), e) == picks.end())
          best_other = std::max(best_other, s[size_t(e)]);
      right += s[size_t(picks[0])] > best_other;
      ++total;
    }
  // A linear score cannot draw the argmax's borders exactly; a random one would be right 1 in 4.
  EXPECT_GE(right, total * 8 / 10);
}

TEST_F(NextExpertPredictorTest, LoadRefusesAnotherShapeOrFile) {
  ASSERT_TRUE(fitted_and_reloaded());
  const auto other = NextExpertPredictor::load(path("p.gguf"), kLayers, kEmbd, kExperts + 1);
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.status().message().find("fitted for 5 n_expert, the model has 6"),
            std::string::npos)
      << other.status().message();
  const auto model =
      NextExpertPredictor::load(testing::golden_synthetic("models/tiny-qwen2moe-q8_0.gguf"),
                                kLayers, kEmbd, kExperts);
  ASSERT_FALSE(model.ok());
  EXPECT_NE(model.status().message().find("not a next-expert predictor"), std::string::npos)
      << model.status().message();
}

TEST(NextExpertPredictorFit, ALayerWithoutSamplesIsAnError) {
  NextExpertPredictorFit fit(kLayers, kEmbd, kExperts);
  std::mt19937 rng(5);
  for (int n = 0; n < 50; ++n) {
    const auto x = random_input(rng);
    fit.add(0, x, rule(0, x));
  }
  const auto solution = fit.solve(NextExpertPredictorFit::kDefaultRidge);
  ASSERT_FALSE(solution.ok());
  EXPECT_NE(solution.status().message().find("layer 1 has 0 samples"), std::string::npos)
      << solution.status().message();
}

}  // namespace
}  // namespace strata
