#include <immintrin.h>

#include "lab/memory_bandwidth.h"

namespace strata {

// The kernels' software prefetch (cpu/kernels/row_prefetch.h: into L2, 4 KiB ahead) belongs in the
// probe too: without it this loop read 18 GB/s where the kernels' way of reading reaches 28,
// and a bound from it flattered every "share of the bound" by half.
constexpr int64_t kPrefetchFloats = 4096 / sizeof(float);

float sum_floats_avx2(const float* x, int64_t n) {
  __m256 a = _mm256_setzero_ps(), b = a, c = a, d = a;
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    _mm_prefetch(reinterpret_cast<const char*>(x + i + kPrefetchFloats), _MM_HINT_T1);
    _mm_prefetch(reinterpret_cast<const char*>(x + i + 16 + kPrefetchFloats), _MM_HINT_T1);
    a = _mm256_add_ps(a, _mm256_loadu_ps(x + i));
    b = _mm256_add_ps(b, _mm256_loadu_ps(x + i + 8));
    c = _mm256_add_ps(c, _mm256_loadu_ps(x + i + 16));
    d = _mm256_add_ps(d, _mm256_loadu_ps(x + i + 24));
  }
  const __m256 sum = _mm256_add_ps(_mm256_add_ps(a, b), _mm256_add_ps(c, d));
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, sum);
  float total = 0;
  for (float lane : lanes) total += lane;
  for (; i < n; ++i) total += x[i];
  return total;
}

}  // namespace strata
