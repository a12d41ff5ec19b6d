// Measures this machine's memory read bandwidth the way the kernels read weights: every
// thread of the pool streams its share of a buffer much larger than the caches, on huge pages
// as the weights are (base/huge_page_memory.h). Benchmarks
// probe right before each run, so a ratio against it compares like with like on machines
// whose bandwidth drifts (shared hosts).
#pragma once

#include <cstdint>
#include <memory>

#include "base/huge_page_memory.h"
#include "cpu/thread_pool.h"

namespace strata {

class BandwidthProbe {
 public:
  // Allocates and touches the buffer once.
  BandwidthProbe(ThreadPool& pool, uint64_t buffer_bytes);

  // Bytes per second: the median of `repetitions` passes over the buffer.
  double measure(int repetitions);

 private:
  ThreadPool& pool_;
  int64_t n_floats_;
  float* data() const { return reinterpret_cast<float*>(buffer_.get()); }
  HugePageMemory buffer_;
};

// Sums n floats (the probe's loop; the AVX2 version keeps 4 loads in flight and prefetches as
// the kernels do).
float sum_floats_scalar(const float* x, int64_t n);
float sum_floats_avx2(const float* x, int64_t n);

}  // namespace strata
