#include "eval/bootstrap.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace strata::eval {
namespace {

TEST(SplitMix64, MatchesTheReferenceSequence) {
  // Vigna's splitmix64.c seeded with 1234567 (the test vector Rosetta Code lists).
  SplitMix64 random(1234567);
  for (uint64_t expected : {6457827717110365317ull, 3203168211198807973ull, 9817491932198370423ull,
                            4593380528125082431ull, 16408922859458223821ull})
    EXPECT_EQ(random.next(), expected);
}

TEST(SplitMix64, BelowIsUniform) {
  SplitMix64 random(42);
  constexpr int kBins = 10, kDraws = 100000;
  std::vector<int> counts(kBins);
  for (int i = 0; i < kDraws; ++i) ++counts[random.below(kBins)];
  double chi_square = 0;
  for (int c : counts) chi_square += std::pow(c - kDraws / kBins, 2) / (kDraws / kBins);
  EXPECT_LT(chi_square, 27.9);  // the 0.999 quantile of chi-square with 9 degrees of freedom
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(random.below(1), 0u);
}

TEST(Bootstrap, EqualWindowsGiveAPointInterval) {
  const std::vector<RatioSample> samples(20, RatioSample{3.0, 10.0});
  const Interval interval = bootstrap_ratio(samples, {});
  EXPECT_DOUBLE_EQ(interval.estimate, 0.3);
  EXPECT_DOUBLE_EQ(interval.lo, 0.3);
  EXPECT_DOUBLE_EQ(interval.hi, 0.3);
}

// Two windows of equal size with means 0 and 1: a resample's mean is 0, 1/2 or 1 with
// probabilities 1/4, 1/2, 1/4, so the 2.5 % and 97.5 % quantiles are 0 and 1.
TEST(Bootstrap, TwoWindowsEnumerated) {
  const std::vector<RatioSample> samples = {{0, 5}, {5, 5}};
  const Interval interval = bootstrap_ratio(samples, {20000, 9, 0.95});
  EXPECT_DOUBLE_EQ(interval.estimate, 0.5);
  EXPECT_DOUBLE_EQ(interval.lo, 0.0);
  EXPECT_DOUBLE_EQ(interval.hi, 1.0);
}

TEST(Bootstrap, SameSeedSameInterval) {
  std::vector<RatioSample> samples;
  SplitMix64 random(5);
  for (int i = 0; i < 30; ++i) samples.push_back({random.uniform(), 1 + double(random.below(9))});
  const Interval a = bootstrap_ratio(samples, {1000, 77, 0.95});
  const Interval b = bootstrap_ratio(samples, {1000, 77, 0.95});
  const Interval c = bootstrap_ratio(samples, {1000, 78, 0.95});
  EXPECT_EQ(a.lo, b.lo);
  EXPECT_EQ(a.hi, b.hi);
  EXPECT_NE(a.lo, c.lo);
}

double normal(SplitMix64& random) {  // Box-Muller
  const double u = 1 - random.uniform(), v = random.uniform();
  return std::sqrt(-2 * std::log(u)) * std::cos(2 * M_PI * v);
}

// Paired windows as `strata eval compare` sees them: per window, candidate A's KLD sum and
// candidate B's share a window effect (some passages are hard for both), and A's mean is
// higher by kTrueDifference. Over many independent data sets, the 95 % interval of the
// difference must cover the true value about 95 % of the time. The percentile bootstrap
// under-covers a little at 40 windows; 400 data sets give a standard error of 1.1 %.
TEST(Bootstrap, PairedIntervalCoversTheTrueDifference) {
  constexpr int kDataSets = 400, kWindows = 40, kPositions = 64;
  constexpr double kTrueDifference = 0.01;
  SplitMix64 random(2024);
  int covered = 0;
  double width_paired = 0, width_unpaired = 0;
  for (int d = 0; d < kDataSets; ++d) {
    std::vector<RatioSample> difference, a_only;
    for (int w = 0; w < kWindows; ++w) {
      const double hardness = std::exp(0.8 * normal(random));  // lognormal window effect
      const double mean_b = 0.02 * hardness;
      const double mean_a = mean_b + kTrueDifference + 0.01 * normal(random);
      difference.push_back({(mean_a - mean_b) * kPositions, kPositions});
      a_only.push_back({mean_a * kPositions, kPositions});
    }
    const Interval interval = bootstrap_ratio(difference, {1000, uint64_t(d) + 1, 0.95});
    covered += interval.lo <= kTrueDifference && kTrueDifference <= interval.hi;
    width_paired += interval.hi - interval.lo;
    const Interval a = bootstrap_ratio(a_only, {1000, uint64_t(d) + 1, 0.95});
    width_unpaired += a.hi - a.lo;
  }
  const double coverage = double(covered) / kDataSets;
  EXPECT_GT(coverage, 0.91);
  EXPECT_LT(coverage, 0.985);
  // Pairing removes the shared window effect: the difference's interval is much narrower
  // than the interval of A's mean alone.
  EXPECT_LT(width_paired, 0.5 * width_unpaired);
}

}  // namespace
}  // namespace strata::eval
