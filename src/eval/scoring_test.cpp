#include "eval/scoring.h"

#include <gtest/gtest.h>

#include <cstring>

#include "eval/eval_test_support.h"

namespace strata::eval {
namespace {

using testing::kBundledModel;
using testing::kSyntheticQ4;
using testing::kSyntheticQ8;

void ignore(const std::string&) {}

struct Loaded {
  Suite suite;
  std::vector<std::vector<int32_t>> tokens;
};

Loaded load(const std::string& dir_name, const std::string& tokenizer_path, int64_t windows,
            int64_t prompt, int64_t scored) {
  const auto dir = testing::write_eval_dir(dir_name);
  auto tokenizer = TextTokenizer::open(tokenizer_path);
  EXPECT_TRUE(tokenizer.ok());
  auto suite = make_suite({dir.string(), tokenizer_path, windows, prompt, scored, 1},
                          *tokenizer.value(), ignore);
  EXPECT_TRUE(suite.ok()) << suite.status().message();
  auto tokens = load_window_tokens(suite.value(), dir.string(), *tokenizer.value());
  EXPECT_TRUE(tokens.ok());
  return {suite.value(), tokens.value()};
}

SessionOptions options(const std::string& model) {
  SessionOptions o;
  o.model_path = model;
  o.n_threads = 2;
  return o;
}

ScoringResult score(const Loaded& loaded, const ScoringConfig& config) {
  const auto result = score_suite(loaded.suite, loaded.tokens, config, ignore);
  EXPECT_TRUE(result.ok()) << result.status().message();
  return result.ok() ? result.value() : ScoringResult{};
}

double mean_kld(const ScoringResult& result) {
  double sum = 0, n = 0;
  for (const WindowScores& w : result.windows)
    for (const PositionScore& p : w.positions) {
      sum += p.kld;
      ++n;
    }
  return sum / n;
}

// Why --ref-batch is safe for an exact, resident reference: single-token decode steps give
// the very bits the prefill batches give.
TEST(Scoring, DecodeRowsEqualBatchRowsForResidentModels) {
  for (const std::string& model : {kSyntheticQ4, kBundledModel}) {
    auto session = Session::open(options(model));
    ASSERT_TRUE(session.ok()) << session.status().message();
    std::vector<int32_t> tokens;
    for (int i = 0; i < 40; ++i) tokens.push_back(int32_t((i * 37 + 11) % 700));
    std::vector<float> decode, batch;
    ASSERT_TRUE(scored_logits(*session.value(), tokens, 9, ScoringMode::kDecode, decode).ok());
    ASSERT_TRUE(scored_logits(*session.value(), tokens, 9, ScoringMode::kBatch, batch).ok());
    ASSERT_EQ(decode.size(), size_t(31 * session.value()->engine().n_vocab()));
    ASSERT_EQ(decode.size(), batch.size());
    EXPECT_EQ(std::memcmp(decode.data(), batch.data(), decode.size() * sizeof(float)), 0) << model;
  }
}

TEST(Scoring, StoredReferenceScoresLikeTheModelItCameFrom) {
  const Loaded loaded = load("stored", kSyntheticQ8, 2, 6, 12);
  const auto full_dir = testing::scratch_dir("stored-full"),
             top_dir = testing::scratch_dir("stored-top");
  ScoringConfig config;
  config.candidate = options(kSyntheticQ4);
  config.mode = ScoringMode::kBatch;
  config.reference_model = options(kSyntheticQ8);
  config.reference_mode = ScoringMode::kBatch;
  config.save_reference_dir = full_dir.string();
  const ScoringResult live = score(loaded, config);
  config.save_reference_dir = top_dir.string();
  config.save_top_k = 16;
  score(loaded, config);

  ScoringConfig stored = config;
  stored.reference_model.reset();
  stored.save_reference_dir.clear();
  stored.reference_logits_dir = full_dir.string();
  const ScoringResult from_full = score(loaded, stored);
  stored.reference_logits_dir = top_dir.string();
  const ScoringResult from_top = score(loaded, stored);
  EXPECT_EQ(from_full.reference["model"]["sha256"], live.reference["model"]["sha256"]);

  ASSERT_EQ(live.windows.size(), 4u);
  double tail = 0;
  for (size_t w = 0; w < live.windows.size(); ++w)
    for (size_t j = 0; j < 12; ++j) {
      const PositionScore &a = live.windows[w].positions[j], &b = from_full.windows[w].positions[j],
                          &c = from_top.windows[w].positions[j];
      EXPECT_EQ(a.kld, b.kld);
      EXPECT_EQ(a.ref_nll, b.ref_nll);
      EXPECT_EQ(a.cand_nll, b.cand_nll);
      EXPECT_EQ(a.top1_agree, c.top1_agree);
      EXPECT_LE(c.kld, a.kld + 1e-6);
      EXPECT_NEAR(c.ref_nll, a.ref_nll, 1e-5);
      tail += from_top.windows[w].tail_masses[j];
    }
  EXPECT_GT(mean_kld(live), 0);
  EXPECT_GT(tail, 0);  // 16 of 768 tokens leave some mass out
}

// Cache-aware routing on a small arena changes the bundled model's logits; the same arena with
// exact routing gives bit-identical logits (DESIGN.md §3), so its KLD is exactly zero.
TEST(Scoring, DecodeModeMeasuresCacheAwareRouting) {
  const Loaded loaded = load("moce", kBundledModel, 2, 8, 16);
  ScoringConfig config;
  config.candidate = options(kBundledModel);
  config.candidate.arena_share = 0.25;
  config.reference_model = options(kBundledModel);
  config.reference_mode = ScoringMode::kBatch;
  const ScoringResult exact = score(loaded, config);
  EXPECT_EQ(mean_kld(exact), 0.0);
  EXPECT_GT(exact.candidate.decode_tokens, 0);
  EXPECT_LT(exact.candidate.decode_experts.hit_rate(), 1.0);

  config.candidate.moce_bonus = 0.85f;
  const ScoringResult moce = score(loaded, config);
  EXPECT_GT(mean_kld(moce), 0.0);
  EXPECT_GT(moce.candidate.decode_experts.hit_rate(), exact.candidate.decode_experts.hit_rate());
}

TEST(Scoring, MismatchedVocabulariesAreRefused) {
  const Loaded loaded = load("vocab", kSyntheticQ8, 1, 4, 4);
  ScoringConfig config;
  config.candidate = options(kSyntheticQ8);
  config.reference_model = options(kBundledModel);
  const auto result = score_suite(loaded.suite, loaded.tokens, config, ignore);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("16384 logits per token, the candidate has 768"),
            std::string::npos)
      << result.status().message();
}

}  // namespace
}  // namespace strata::eval
