// Measures this machine's memory read bandwidth the way the kernels read weights: every
// thread of the pool streams its share of a buffer much larger than the caches.
#pragma once

#include <cstdint>

#include "cpu/thread_pool.h"

namespace strata {

// Bytes per second; the median of `repetitions` passes over `buffer_bytes`.
double measure_read_bandwidth(ThreadPool& pool, uint64_t buffer_bytes = 1ull << 30,
                              int repetitions = 5);

// Sums n floats (used by the probe; the AVX2 version keeps 4 loads in flight).
float sum_floats_scalar(const float* x, int64_t n);
float sum_floats_avx2(const float* x, int64_t n);

}  // namespace strata
