// Short value rows (a short context) lie a whole capacity apart, so each is a few lines that
// no hardware prefetcher sees coming and, in decode, they come from DRAM: a latency chain of
// head_dim rows. The weighted-value kernels request rows kValueRowsAhead dimensions ahead to
// overlap those misses. Long rows stream, and the hardware prefetchers keep up.
// Include only from *_avx2.cpp and *_avx512.cpp files; always inlined, so that no out-of-line
// copy compiled with AVX-512 flags can serve the AVX2 kernels.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace strata {

inline constexpr int64_t kValueRowsAhead = 4;
inline constexpr int64_t kPrefetchedRowBytes = 4096;

[[gnu::always_inline]] inline void prefetch_value_rows(const float* rows, int64_t n_rows,
                                                       int64_t capacity, int64_t n_pos) {
  const int64_t row_bytes = n_pos * int64_t(sizeof(float));
  if (row_bytes > kPrefetchedRowBytes) return;
  for (int64_t r = 0; r < n_rows; ++r) {
    const auto begin = reinterpret_cast<uintptr_t>(rows + r * capacity);
    for (uintptr_t line = begin & ~uintptr_t(63); line < begin + uintptr_t(row_bytes); line += 64)
      _mm_prefetch(reinterpret_cast<const char*>(line), _MM_HINT_T0);
  }
}

}  // namespace strata
