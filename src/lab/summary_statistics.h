// Median and range of repeated measurements, as benchmarks report them.
#pragma once

#include <algorithm>
#include <vector>

namespace strata {

struct Summary {
  double median = 0, min = 0, max = 0;
  int n = 0;
};

// REQUIRES: !values.empty(). The median of an even count is the mean of the middle two.
inline Summary summarize(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  const double median = n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
  return {median, values.front(), values.back(), int(n)};
}

}  // namespace strata
