// The sum of an AVX2 register's 8 floats, in one fixed order ((x0 + x4) + (x2 + x6)) +
// ((x1 + x5) + (x3 + x7)), which every kernel's results depend on. Include only from
// *_avx2.cpp and *_avx512.cpp files. Always inlined: an out-of-line copy compiled with AVX-512
// flags could be the one the linker keeps for the AVX2 kernels too.
#pragma once

#include <immintrin.h>

namespace strata {

[[gnu::always_inline]] inline float horizontal_sum(__m256 v) {
  __m128 sum = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  sum = _mm_add_ps(sum, _mm_movehl_ps(sum, sum));
  sum = _mm_add_ss(sum, _mm_movehdup_ps(sum));
  return _mm_cvtss_f32(sum);
}

}  // namespace strata
