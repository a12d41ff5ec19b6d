#include "eval/bootstrap.h"

#include <algorithm>
#include <vector>

#include "base/check.h"
#include "eval/metrics.h"

namespace strata::eval {

uint64_t SplitMix64::next() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t SplitMix64::below(uint64_t n) {
  STRATA_CHECK(n > 0);
  // Values at or above the largest multiple of n would favour the low residues.
  const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  uint64_t x;
  do x = next();
  while (x >= limit);
  return x % n;
}

double SplitMix64::uniform() { return double(next() >> 11) * 0x1.0p-53; }

Interval bootstrap_ratio(std::span<const RatioSample> samples, const BootstrapOptions& options) {
  STRATA_CHECK(!samples.empty());
  STRATA_CHECK(options.resamples >= 1);
  double value = 0, count = 0;
  for (const RatioSample& s : samples) {
    STRATA_CHECK(s.count > 0);
    value += s.value_sum;
    count += s.count;
  }
  SplitMix64 random(options.seed);
  std::vector<double> statistics;
  statistics.reserve(size_t(options.resamples));
  for (int b = 0; b < options.resamples; ++b) {
    double resampled_value = 0, resampled_count = 0;
    for (size_t i = 0; i < samples.size(); ++i) {
      const RatioSample& s = samples[random.below(samples.size())];
      resampled_value += s.value_sum;
      resampled_count += s.count;
    }
    statistics.push_back(resampled_value / resampled_count);
  }
  std::sort(statistics.begin(), statistics.end());
  const double tail = (1 - options.confidence) / 2;
  return {value / count, quantile(statistics, tail), quantile(statistics, 1 - tail)};
}

}  // namespace strata::eval
