// Measures this machine's memory read bandwidth the way the kernels read weights: every
// thread of the pool streams its share of a buffer much larger than the caches, on transparent
// huge pages where the kernel allows (a resident model's page cache is mapped in 2 MiB pages,
// and the arena asks for them; 4 KiB pages read 2-3 % slower here). Benchmarks
// probe right before each run, so a ratio against it compares like with like on machines
// whose bandwidth drifts (shared hosts).
#pragma once

#include <cstdint>
#include <memory>

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
  struct Free {
    void operator()(float* p) const;
  };
  std::unique_ptr<float, Free> buffer_;
};

// Sums n floats (the probe's loop; the AVX2 version keeps 4 loads in flight and prefetches as
// the kernels do).
float sum_floats_scalar(const float* x, int64_t n);
float sum_floats_avx2(const float* x, int64_t n);

}  // namespace strata
