#include "cpu/memory_bandwidth.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <vector>

#include "base/cpu_features.h"

namespace strata {

float sum_floats_scalar(const float* x, int64_t n) {
  float total = 0;
  for (int64_t i = 0; i < n; ++i) total += x[i];
  return total;
}

double measure_read_bandwidth(ThreadPool& pool, uint64_t buffer_bytes, int repetitions) {
  const int64_t n = int64_t(buffer_bytes / sizeof(float));
  std::unique_ptr<float[]> buffer(new float[size_t(n)]);
  // Touch every page from the pool's threads, so the pages are resident before timing.
  const int64_t n_tasks = pool.size() * 16;
  pool.parallel_for(n_tasks, [&](int64_t task, int) {
    const int64_t begin = n * task / n_tasks, end = n * (task + 1) / n_tasks;
    std::fill(buffer.get() + begin, buffer.get() + end, 1.0f);
  });
  const auto sum = simd_level() == SimdLevel::kAvx2 ? sum_floats_avx2 : sum_floats_scalar;
  std::vector<double> rates;
  volatile float sink = 0;
  for (int r = 0; r < repetitions; ++r) {
    const auto start = std::chrono::steady_clock::now();
    pool.parallel_for(n_tasks, [&](int64_t task, int) {
      const int64_t begin = n * task / n_tasks, end = n * (task + 1) / n_tasks;
      sink = sink + sum(buffer.get() + begin, end - begin);
    });
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    rates.push_back(double(buffer_bytes) / seconds);
  }
  std::sort(rates.begin(), rates.end());
  return rates[rates.size() / 2];
}

}  // namespace strata
