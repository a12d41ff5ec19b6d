#include <immintrin.h>

#include "cpu/topk.h"

namespace strata {

void top_k_scan_avx2(const float* values, int64_t n, TopKList& list) {
  int32_t i = 0;
  for (; i < int32_t(n) && !list.full(); ++i) list.offer(values, i);
  for (; i + 8 <= int32_t(n); i += 8) {
    // Only values above the current k-th can enter (a tie loses: its index is higher).
    const __m256 bar = _mm256_set1_ps(list.bar(values));
    unsigned mask =
        unsigned(_mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(values + i), bar, _CMP_GT_OQ)));
    for (; mask != 0; mask &= mask - 1) list.offer(values, i + __builtin_ctz(mask));
  }
  for (; i < int32_t(n); ++i) list.offer(values, i);
}

}  // namespace strata
