#include "model/next_expert_predictor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include <fmt/format.h>

#include "gguf/gguf_writer.h"
#include "model/model_file_test_support.h"
#include "model/next_expert_predictor_fit.h"
#include "quant/quant_type.h"

namespace strata {
namespace {

constexpr int64_t kLayers = 2, kEmbd = 6, kExperts = 5, kHorizon = 2;

std::vector<float> random_input(std::mt19937& rng) {
  std::normal_distribution<float> normal;
  std::vector<float> x(static_cast<size_t>(kEmbd));
  for (float& v : x) v = normal(rng);
  return x;
}

// In layer l, the token `ahead` tokens later picks the expert (largest of x's first five
// components + l + ahead) mod 5 and always expert 4 - l: a rule a linear score can learn to rank.
std::vector<int32_t> rule(int layer, int ahead, const std::vector<float>& x) {
  const int32_t largest = int32_t(std::max_element(x.begin(), x.begin() + kExperts) - x.begin());
  const int32_t picked = int32_t((largest + layer + ahead) % kExperts);
  const int32_t always = int32_t(4 - layer);
  if (picked == always) return {picked};
  return {picked, always};
}

// The predictor's scores for the token `ahead` tokens after the one x is about.
std::vector<float> scores(const NextExpertPredictor& predictor, int layer, int ahead,
                          const std::vector<float>& x) {
  const Matrix m = predictor.matrix(layer);
  const auto* w = reinterpret_cast<const float*>(m.data);
  std::vector<float> s(static_cast<size_t>(kExperts));
  for (int64_t e = 0; e < kExperts; ++e) {
    const int64_t row = (ahead - 1) * kExperts + e;
    s[size_t(e)] = predictor.bias(layer)[size_t(row)];
    for (int64_t i = 0; i < kEmbd; ++i) s[size_t(e)] += w[row * kEmbd + i] * x[size_t(i)];
  }
  return s;
}

void add_samples(NextExpertPredictorFit& fit, int layer, int n, std::mt19937& rng) {
  for (int i = 0; i < n; ++i) {
    const auto x = random_input(rng);
    std::vector<std::vector<int32_t>> picks;
    for (int ahead = 1; ahead <= fit.horizon(); ++ahead) picks.push_back(rule(layer, ahead, x));
    const std::vector<std::span<const int32_t>> picks_ahead(picks.begin(), picks.end());
    fit.add(layer, x, picks_ahead);
  }
}

class NextExpertPredictorTest : public testing::ScratchDirectoryTest {
 protected:
  std::shared_ptr<const NextExpertPredictor> fitted_and_reloaded() {
    NextExpertPredictorFit fit(kLayers, kEmbd, kExperts, kHorizon);
    std::mt19937 rng(3);
    for (int layer = 0; layer < kLayers; ++layer) add_samples(fit, layer, 2000, rng);
    const auto solution = fit.solve(NextExpertPredictorFit::kDefaultRidge);
    EXPECT_TRUE(solution.ok()) << solution.status().message();
    if (!solution.ok()) return nullptr;
    const Status written =
        NextExpertPredictor::write(path("p.gguf"), kLayers, kEmbd, kExperts, kHorizon,
                                   solution.value().weights, solution.value().biases, "test");
    EXPECT_TRUE(written.ok()) << written.message();
    auto loaded = NextExpertPredictor::load(path("p.gguf"), kLayers, kEmbd, kExperts);
    EXPECT_TRUE(loaded.ok()) << loaded.status().message();
    return loaded.ok() ? loaded.value() : nullptr;
  }
};

TEST_F(NextExpertPredictorTest, FitRanksEachNextTokensPicksFirstOnNewInputs) {
  const auto predictor = fitted_and_reloaded();
  ASSERT_TRUE(predictor);
  EXPECT_EQ(predictor->horizon(), kHorizon);
  std::mt19937 rng(11);
  for (int ahead = 1; ahead <= kHorizon; ++ahead) {
    int right = 0, total = 0;
    for (int n = 0; n < 200; ++n)
      for (int layer = 0; layer < kLayers; ++layer) {
        const auto x = random_input(rng);
        const auto s = scores(*predictor, layer, ahead, x);
        const auto picks = rule(layer, ahead, x);
        // The always-picked expert scores near 1, the rule's pick above every expert not
        // picked.
        EXPECT_NEAR(s[size_t(4 - layer)], 1.0, 0.1);
        float best_other = -1e9f;
        for (int32_t e = 0; e < kExperts; ++e)
          if (std::find(picks.begin(), picks.end(), e) == picks.end())
            best_other = std::max(best_other, s[size_t(e)]);
        right += s[size_t(picks[0])] > best_other;
        ++total;
      }
    // A linear score cannot draw the argmax's borders exactly; a random one would be right 1 in
    // 4.
    EXPECT_GE(right, total * 8 / 10) << ahead << " tokens ahead";
  }
}

TEST_F(NextExpertPredictorTest, LoadRefusesAnotherShapeOrFile) {
  ASSERT_TRUE(fitted_and_reloaded());
  const auto other = NextExpertPredictor::load(path("p.gguf"), kLayers, kEmbd, kExperts + 1);
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.status().message().find("fitted for 5 n_expert, the model has 6"),
            std::string::npos)
      << other.status().message();
  const auto model = NextExpertPredictor::load(
      testing::golden_synthetic("models/tiny-qwen2moe-q8_0.gguf"), kLayers, kEmbd, kExperts);
  ASSERT_FALSE(model.ok());
  EXPECT_NE(model.status().message().find("not a next-expert predictor"), std::string::npos)
      << model.status().message();
}

// Files written before the horizon key existed score the next token only.
TEST_F(NextExpertPredictorTest, AFileWithoutAHorizonScoresTheNextTokenOnly) {
  {
    gguf::GgufWriter writer(path("old.gguf"));
    writer.set_string("general.architecture", NextExpertPredictor::kArchitecture);
    writer.set_uint32("strata.next_experts.n_layer", uint32_t(kLayers));
    writer.set_uint32("strata.next_experts.n_embd", uint32_t(kEmbd));
    writer.set_uint32("strata.next_experts.n_expert", uint32_t(kExperts));
    const auto f32 = uint32_t(QuantType::kF32);
    for (int64_t l = 0; l < kLayers; ++l) {
      ASSERT_TRUE(
          writer.add_tensor(fmt::format("blk.{}.next_experts.weight", l), {kEmbd, kExperts}, f32)
              .ok());
      ASSERT_TRUE(
          writer.add_tensor(fmt::format("blk.{}.next_experts.bias", l), {kExperts}, f32).ok());
    }
    ASSERT_TRUE(writer.begin().ok());
    const std::vector<uint8_t> weights(size_t(kEmbd * kExperts) * sizeof(float), 0);
    const std::vector<uint8_t> biases(size_t(kExperts) * sizeof(float), 0);
    for (int64_t l = 0; l < kLayers; ++l) {
      ASSERT_TRUE(writer.write_tensor_data(weights).ok());
      ASSERT_TRUE(writer.write_tensor_data(biases).ok());
    }
    ASSERT_TRUE(writer.finish().ok());
  }
  const auto loaded = NextExpertPredictor::load(path("old.gguf"), kLayers, kEmbd, kExperts);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ(loaded.value()->horizon(), 1);
  EXPECT_EQ(loaded.value()->n_scores(), kExperts);
  const auto bytes = NextExpertPredictor::bytes_to_load(path("old.gguf"), kLayers, kEmbd, kExperts);
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(bytes.value(), loaded.value()->bytes());
}

TEST(NextExpertPredictorFit, ALayerWithoutSamplesIsAnError) {
  NextExpertPredictorFit fit(kLayers, kEmbd, kExperts, kHorizon);
  std::mt19937 rng(5);
  add_samples(fit, 0, 50, rng);
  const auto solution = fit.solve(NextExpertPredictorFit::kDefaultRidge);
  ASSERT_FALSE(solution.ok());
  EXPECT_NE(solution.status().message().find("layer 1 has 0 samples"), std::string::npos)
      << solution.status().message();
}

}  // namespace
}  // namespace strata
