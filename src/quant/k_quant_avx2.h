// Pieces shared by the AVX2 dot-product kernels of the super-block formats. Include only from
// *_avx2.cpp files: everything here is inline, compiled with -mavx2 -mfma -mf16c -mbmi2, and lives
// in its own namespace so no scalar file can end up calling a copy of it.
//
// How every kernel works: a weight super-block is decoded once into unsigned 8-bit quants, then
// for each activation column in the group maddubs (u8 x s8 -> pairs summed in i16) and madd with
// the sub-block scales (i16 x i16 -> pairs summed in i32) accumulate exact integer sums; offsets
// and minimums come from the Q8_K bsums. Once per super-block the integer lanes are converted and
// fused into float lanes with d_w * d_x, and the lanes are summed once per row.
#pragma once

#include "quant/q8_k.h"

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace strata::kquant::avx2 {

// Offsets into a Q8_K block.
inline constexpr size_t kQ8KQs = offsetof(BlockQ8_K, qs);
inline constexpr size_t kQ8KBsums = offsetof(BlockQ8_K, bsums);

inline float load_f32(const uint8_t* p) {
  float value;
  std::memcpy(&value, p, sizeof value);
  return value;
}

inline float load_fp16(const uint8_t* p) {
  uint16_t half;
  std::memcpy(&half, p, sizeof half);
  return _cvtsh_ss(half);
}

inline __m256i load_256(const uint8_t* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}

inline __m128i load_128(const uint8_t* p) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
}

// Sum of the 8 lanes, always in the same order (the result must not depend on anything else).
inline float hsum(__m256 v) {
  __m128 sum = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  sum = _mm_add_ps(sum, _mm_movehl_ps(sum, sum));
  sum = _mm_add_ss(sum, _mm_movehdup_ps(sum));
  return _mm_cvtss_f32(sum);
}

// Every i16 lane of each 128-bit half gets element k (0..7) of that half.
inline __m256i broadcast_i16(__m256i v, int k) {
  return _mm256_shuffle_epi8(v, _mm256_set1_epi16(int16_t(0x0100 + 0x0202 * k)));
}

// The low half gets element 2k of the low half, the high half element 2k + 1 of the high half:
// the scales of a 32-weight chunk made of two 16-weight sub-blocks. k in 0..3.
inline __m256i broadcast_i16_pair(__m256i v, int k) {
  return _mm256_shuffle_epi8(v, _mm256_setr_m128i(_mm_set1_epi16(int16_t(0x0100 + 0x0404 * k)),
                                                  _mm_set1_epi16(int16_t(0x0302 + 0x0404 * k))));
}

// 32 unsigned quants times 32 int8 activations, summed in pairs (i16, exact while
// q * 127 * 2 < 32768, true for q < 128) then weighted by `scales` (i16 pairs into i32).
inline __m256i scaled_dot(__m256i quants, const uint8_t* activations, __m256i scales) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(quants, load_256(activations)), scales);
}

// Runs kernel.template operator()<k>(first_column) over groups of 4 columns, then one group of the
// remaining 1-3. A kernel handles each column of a group with the same instructions in the same
// order whatever k is, so a column's bits do not depend on n_cols.
template <class Kernel>
inline void for_each_column_group(int n_cols, const Kernel& kernel) {
  int c = 0;
  for (; c + 4 <= n_cols; c += 4) kernel.template operator()<4>(c);
  switch (n_cols - c) {
    case 3:
      kernel.template operator()<3>(c);
      break;
    case 2:
      kernel.template operator()<2>(c);
      break;
    case 1:
      kernel.template operator()<1>(c);
      break;
    default:
      break;
  }
}

}  // namespace strata::kquant::avx2
