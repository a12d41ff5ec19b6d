// Bootstrap confidence intervals over windows. Positions inside a window are correlated (they
// share a context, and a knob that hurts one token of a passage tends to hurt its neighbours),
// so windows, not positions, are the units that are resampled.
//
// Each window contributes (value_sum, count): e.g. the sum of its positions' KLD and the number
// of positions. A statistic is the ratio sum(value_sum) / sum(count) over a resample, i.e. the
// mean over its positions. For two candidates scored on the same windows (paired), value_sum is
// the difference of their sums, and the statistic is the difference of their means.
//
// The interval is the percentile bootstrap: resample windows with replacement, B times, and
// take the (1 - confidence) / 2 and (1 + confidence) / 2 quantiles of the statistic. The
// random stream is SplitMix64 from `seed`, mapped to indices without modulo bias, so intervals
// are the same on every machine and compiler.
#pragma once

#include <cstdint>
#include <span>

namespace strata::eval {

struct RatioSample {
  double value_sum = 0;
  double count = 0;
};

struct Interval {
  double estimate = 0;  // the statistic over all windows
  double lo = 0, hi = 0;
};

struct BootstrapOptions {
  int resamples = 2000;
  uint64_t seed = 1;
  double confidence = 0.95;
};

// REQUIRES: !samples.empty(), every count > 0, options.resamples >= 1.
Interval bootstrap_ratio(std::span<const RatioSample> samples, const BootstrapOptions& options);

// SplitMix64 (Steele, Lea and Flood 2014): a tiny generator whose output is fixed by its
// definition, unlike std::uniform_int_distribution's.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next();
  // Uniform in [0, n) by rejection. REQUIRES: n > 0.
  uint64_t below(uint64_t n);
  double uniform();  // [0, 1), 53 bits

 private:
  uint64_t state_;
};

}  // namespace strata::eval
