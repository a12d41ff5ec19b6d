// The AVX2 dot-product skeleton of the float formats (F32, F16, BF16): weights converted to 8
// floats at a time, once per group of up to four columns, then one FMA per column. Include only
// from *_avx2.cpp files (compiled with -mavx2 -mfma -mf16c).
//
// Determinism: each column runs the same float operations in every group size: elements
// [16k, 16k + 8) accumulate into one register and [16k + 8, 16k + 16) into another; a tail of
// 8 goes to the first, a tail of fewer than 8 is zero-padded into the second; then the two are
// added and summed horizontally in a fixed order.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "cpu/kernels/groups_of_four.h"
#include "cpu/kernels/horizontal_sum_avx2.h"

namespace strata::dense_avx2 {

// How far ahead the weight row is prefetched, into L2: one row is often shorter than the
// distance the memory latency needs covered, so the hardware prefetcher, which stops at page
// boundaries, leaves DRAM idle at every row start (prefetches past the row's end never fault).
inline constexpr int64_t kPrefetchBytes = 4096;

// Elements [i, i + 8) of a row, or fewer zero-padded ones, as floats. Loader::kBytes is the
// size of an element and Loader::load8(p) converts the 8 elements at p (any alignment).
template <class Loader>
inline __m256 load_tail(const uint8_t* row, int64_t i, int64_t count) {
  alignas(32) uint8_t padded[8 * Loader::kBytes] = {};
  std::memcpy(padded, row + i * Loader::kBytes, size_t(count) * Loader::kBytes);
  return Loader::load8(padded);
}

template <class Loader, int kCols>
void dot_columns(int64_t n, const uint8_t* w, const uint8_t* x, size_t x_stride, float* out) {
  constexpr int64_t kBytes = Loader::kBytes;
  __m256 low[kCols], high[kCols];
  for (int c = 0; c < kCols; ++c) low[c] = high[c] = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    _mm_prefetch(reinterpret_cast<const char*>(w) + i * kBytes + kPrefetchBytes, _MM_HINT_T1);
    const __m256 w_low = Loader::load8(w + i * kBytes);
    const __m256 w_high = Loader::load8(w + (i + 8) * kBytes);
#pragma GCC unroll 4
    for (int c = 0; c < kCols; ++c) {
      const uint8_t* column = x + size_t(c) * x_stride;
      low[c] = _mm256_fmadd_ps(w_low, Loader::load8(column + i * kBytes), low[c]);
      high[c] = _mm256_fmadd_ps(w_high, Loader::load8(column + (i + 8) * kBytes), high[c]);
    }
  }
  if (i + 8 <= n) {
    const __m256 w_low = Loader::load8(w + i * kBytes);
    for (int c = 0; c < kCols; ++c)
      low[c] = _mm256_fmadd_ps(w_low, Loader::load8(x + size_t(c) * x_stride + i * kBytes), low[c]);
    i += 8;
  }
  if (i < n) {
    const __m256 w_tail = load_tail<Loader>(w, i, n - i);
    for (int c = 0; c < kCols; ++c)
      high[c] =
          _mm256_fmadd_ps(w_tail, load_tail<Loader>(x + size_t(c) * x_stride, i, n - i), high[c]);
  }
  for (int c = 0; c < kCols; ++c) out[c] = horizontal_sum(_mm256_add_ps(low[c], high[c]));
}

// The VecDotFn of a format: columns in groups of four, then the remainder as one group.
template <class Loader>
void vec_dot(int64_t n, const void* w, const void* x, size_t x_stride, int n_cols, float* out) {
  const auto* columns = static_cast<const uint8_t*>(x);
  in_groups_of_four(n_cols, [&](auto size, int first) {
    dot_columns<Loader, size()>(n, static_cast<const uint8_t*>(w),
                                columns + size_t(first) * x_stride, x_stride, out + first);
  });
}

}  // namespace strata::dense_avx2
