#include "lab/memory_bandwidth.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "base/check.h"
#include "base/cpu_features.h"

namespace strata {

float sum_floats_scalar(const float* x, int64_t n) {
  float total = 0;
  for (int64_t i = 0; i < n; ++i) total += x[i];
  return total;
}

BandwidthProbe::BandwidthProbe(ThreadPool& pool, uint64_t buffer_bytes)
    : pool_(pool),
      n_floats_(int64_t(buffer_bytes / sizeof(float))),
      buffer_(allocate_on_huge_pages(size_t(n_floats_) * sizeof(float))) {
  STRATA_CHECK(buffer_ != nullptr);
  // Touch every page from the pool's threads, so the pages are resident before timing.
  const int64_t n_tasks = pool_.size() * 16;
  pool_.parallel_for(n_tasks, [&](int64_t task, int) {
    const int64_t begin = n_floats_ * task / n_tasks, end = n_floats_ * (task + 1) / n_tasks;
    std::fill(data() + begin, data() + end, 1.0f);
  });
}

double BandwidthProbe::measure(int repetitions) {
  const auto sum = simd_level() == SimdLevel::kAvx2 ? sum_floats_avx2 : sum_floats_scalar;
  const int64_t n_tasks = pool_.size() * 16;
  std::vector<double> rates;
  volatile float sink = 0;
  for (int r = 0; r < repetitions; ++r) {
    const auto start = std::chrono::steady_clock::now();
    pool_.parallel_for(n_tasks, [&](int64_t task, int) {
      const int64_t begin = n_floats_ * task / n_tasks, end = n_floats_ * (task + 1) / n_tasks;
      sink = sink + sum(data() + begin, end - begin);
    });
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    rates.push_back(double(n_floats_) * sizeof(float) / seconds);
  }
  std::sort(rates.begin(), rates.end());
  return rates[rates.size() / 2];
}

}  // namespace strata
