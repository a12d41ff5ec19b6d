// Float registers of AVX-512 built from, and split into, two halves of 8, through their 64-bit
// forms, which AVX-512 F has (the float forms are AVX-512 DQ's). Include only from
// *_avx512.cpp files; always inlined, so that no out-of-line copy can serve another file.
#pragma once

#include <immintrin.h>

namespace strata {

// [low x8 | high x8]
[[gnu::always_inline]] inline __m512 two_halves(__m256 low, __m256 high) {
  return _mm512_castpd_ps(
      _mm512_insertf64x4(_mm512_zextpd256_pd512(_mm256_castps_pd(low)), _mm256_castps_pd(high), 1));
}

[[gnu::always_inline]] inline __m256 high_half(__m512 x) {
  return _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1));
}

}  // namespace strata
