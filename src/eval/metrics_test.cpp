#include "eval/metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "eval/bootstrap.h"

namespace strata::eval {
namespace {

std::vector<float> random_logits(size_t n, uint64_t seed, double scale) {
  SplitMix64 random(seed);
  std::vector<float> logits(n);
  for (float& x : logits) x = float(scale * (2 * random.uniform() - 1));
  return logits;
}

// Logits whose softmax is exactly `probabilities` (up to float rounding of the logs).
std::vector<float> logits_of(std::vector<double> probabilities) {
  std::vector<float> logits;
  for (double p : probabilities) logits.push_back(float(std::log(p)));
  return logits;
}

TEST(Metrics, IdenticalRowsScoreZero) {
  const auto logits = random_logits(1000, 7, 8.0);
  const PositionScore s = compare_rows(logits, logits, 123);
  EXPECT_EQ(s.kld, 0.0);
  EXPECT_TRUE(s.top1_agree);
  EXPECT_EQ(s.delta_p, 0.0);
  EXPECT_EQ(s.ref_nll, s.cand_nll);
  EXPECT_GT(s.ref_nll, 0.0);
}

TEST(Metrics, TwoTokenCasesMatchClosedForms) {
  // P = (1/2, 1/2), Q = (1/4, 3/4): KL = 1/2 ln 2 + 1/2 ln(2/3) = 1/2 ln(4/3).
  const PositionScore a = compare_rows(logits_of({0.5, 0.5}), logits_of({0.25, 0.75}), 1);
  EXPECT_NEAR(a.kld, 0.5 * std::log(4.0 / 3.0), 1e-7);
  EXPECT_FALSE(a.top1_agree);  // P's tie goes to token 0, Q's argmax is 1
  EXPECT_NEAR(a.ref_nll, std::log(2.0), 1e-7);
  EXPECT_NEAR(a.cand_nll, -std::log(0.75), 1e-7);
  EXPECT_NEAR(a.delta_p, 0.25, 1e-7);
  // P = (0.9, 0.1), Q = (0.6, 0.4): KL = 0.9 ln 1.5 + 0.1 ln 0.25.
  const PositionScore b = compare_rows(logits_of({0.9, 0.1}), logits_of({0.6, 0.4}), 0);
  EXPECT_NEAR(b.kld, 0.9 * std::log(1.5) + 0.1 * std::log(0.25), 1e-7);
  EXPECT_TRUE(b.top1_agree);
  EXPECT_NEAR(b.delta_p, -0.3, 1e-7);
  // KL is not symmetric.
  const PositionScore c = compare_rows(logits_of({0.6, 0.4}), logits_of({0.9, 0.1}), 0);
  EXPECT_NEAR(c.kld, 0.6 * std::log(0.6 / 0.9) + 0.4 * std::log(4.0), 1e-7);
}

TEST(Metrics, ShiftedAndHugeLogitsGiveTheSameScores) {
  const auto base = random_logits(500, 3, 5.0), other = random_logits(500, 4, 5.0);
  auto shifted = base;
  for (float& x : shifted) x += 3000.0f;  // exp() of these overflows without the max shift
  const PositionScore a = compare_rows(base, other, 17), b = compare_rows(shifted, other, 17);
  ASSERT_TRUE(std::isfinite(b.kld));
  EXPECT_NEAR(a.kld, b.kld, 1e-3 * a.kld);  // float32 spacing at 3000 is 2.4e-4
  EXPECT_EQ(a.top1_agree, b.top1_agree);
}

// The full KLD minus the top-K one is the reference's tail mass times the KL divergence of
// the two distributions renormalised over the tail (the chain rule of KL), computed here
// directly from the definition.
TEST(Metrics, TopKKldIsALowerBoundShortByTheTailDivergence) {
  const size_t n = 400;
  const auto ref = random_logits(n, 11, 6.0), cand = random_logits(n, 12, 6.0);
  std::vector<double> p(n), q(n);
  double zp = 0, zq = 0;
  for (size_t i = 0; i < n; ++i) {
    zp += std::exp(double(ref[i]));
    zq += std::exp(double(cand[i]));
  }
  for (size_t i = 0; i < n; ++i) {
    p[i] = std::exp(double(ref[i])) / zp;
    q[i] = std::exp(double(cand[i])) / zq;
  }
  const double full = compare_rows(ref, cand, 5).kld;
  for (int k : {1, 10, 100, 399}) {
    const TopKRow row = top_k_row(ref, k, 5);
    std::vector<bool> kept(n, false);
    for (int32_t id : row.ids) kept[size_t(id)] = true;
    double p_tail = 0, q_tail = 0, tail_kl = 0;
    for (size_t i = 0; i < n; ++i)
      if (!kept[i]) {
        p_tail += p[i];
        q_tail += q[i];
      }
    for (size_t i = 0; i < n; ++i)
      if (!kept[i]) tail_kl += p[i] / p_tail * std::log((p[i] / p_tail) / (q[i] / q_tail));
    const PositionScore s = compare_top_k(row, cand, 5);
    EXPECT_LE(s.kld, full + 1e-6) << k;
    EXPECT_NEAR(full - s.kld, p_tail * tail_kl, 1e-5) << k;
    EXPECT_NEAR(row.tail_mass(), p_tail, 1e-6) << k;
    EXPECT_NEAR(s.ref_nll, -std::log(p[5]), 1e-5);
    EXPECT_EQ(s.top1_agree, compare_rows(ref, cand, 5).top1_agree);
  }
  const PositionScore all = compare_top_k(top_k_row(ref, int(n), 5), cand, 5);
  EXPECT_NEAR(all.kld, full, 1e-6);  // float32 log-probs: ~1e-7 relative each
}

TEST(Metrics, TopKRowIsSortedWithTiesToTheLowerId) {
  const std::vector<float> logits = {1, 3, 3, 0, 2};
  const TopKRow row = top_k_row(logits, 3, 4);
  EXPECT_EQ(row.ids, (std::vector<int32_t>{1, 2, 4}));
  EXPECT_NEAR(row.next_log_prob, log_softmax(logits)[4], 1e-6);
}

TEST(Metrics, QuantilesInterpolateBetweenRanksLikeNumPy) {
  const std::vector<double> four = {1, 2, 3, 4};
  EXPECT_DOUBLE_EQ(quantile(four, 0.0), 1);
  EXPECT_DOUBLE_EQ(quantile(four, 0.5), 2.5);
  EXPECT_DOUBLE_EQ(quantile(four, 0.9), 3.7);  // numpy.quantile([1, 2, 3, 4], 0.9)
  EXPECT_DOUBLE_EQ(quantile(four, 1.0), 4);
  std::vector<double> hundred;
  for (int i = 1; i <= 100; ++i) hundred.push_back(i);
  EXPECT_NEAR(quantile(hundred, 0.99), 99.01, 1e-12);
  EXPECT_DOUBLE_EQ(quantile(std::vector<double>{5}, 0.99), 5);
}

TEST(Metrics, SummaryPoolsPositions) {
  std::vector<PositionScore> scores = {{0.1, true, 1.0, 2.0, 0.1},
                                       {0.3, false, 2.0, 1.0, -0.2},
                                       {0.0, true, 3.0, 3.0, 0.2},
                                       {0.6, true, 0.5, 1.5, 0.0}};
  const ScoreSummary s = summarize_scores(scores);
  EXPECT_EQ(s.n, 4);
  EXPECT_DOUBLE_EQ(s.kld_mean, 0.25);
  EXPECT_DOUBLE_EQ(s.kld_median, 0.2);
  EXPECT_DOUBLE_EQ(s.kld_max, 0.6);
  EXPECT_NEAR(s.kld_p90, 0.3 + 0.7 * 0.3, 1e-12);  // position 2.7 of 0, 0.1, 0.3, 0.6
  EXPECT_DOUBLE_EQ(s.top1_agreement, 0.75);
  EXPECT_NEAR(s.ppl_ref, std::exp(6.5 / 4), 1e-12);
  EXPECT_NEAR(s.ppl_cand, std::exp(7.5 / 4), 1e-12);
  EXPECT_NEAR(s.rms_delta_p, std::sqrt((0.01 + 0.04 + 0.04) / 4), 1e-12);
  EXPECT_EQ(s.tail_mass_mean, 0);
}

}  // namespace
}  // namespace strata::eval
