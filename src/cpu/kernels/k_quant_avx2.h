// Pieces shared by the dot-product kernels of the super-block formats. Include only from
// *_avx2.cpp and *_avx512.cpp files: every function here is always inlined (an out-of-line copy
// compiled with AVX-512 flags could be the one the linker keeps for the AVX2 kernels too) and
// lives in its own namespace so no scalar file can end up calling a copy of it.
//
// How every kernel works: a weight super-block is decoded once into unsigned 8-bit quants (IQ4_XS:
// code book magnitudes, their signs moved onto the activations), then for each activation column
// of the group maddubs (u8 x s8 -> pairs summed in i16) and madd with the sub-block scales
// (i16 x i16 -> pairs summed in i32) accumulate exact integer sums; quant offsets and minimums
// come from the Q8_K bsums. Once per super-block the integer lanes are converted and fused into
// float lanes with d_w * d_x, and the lanes are summed once per row. The vector ports, not memory,
// are the limit in an L2-resident loop, so decoding avoids shifts and conversions where a mask or
// a pshufb does.
#pragma once

#include "quant/q8_k.h"

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace strata::kquant::avx2 {

// A constant GCC cannot see into. Built with _mm256_set1_epi8 and friends, GCC keeps constants
// as immediates and, when registers run short inside a loop, rebuilds them on every iteration
// (mov, vmovd, vpbroadcast: vector-port uops the kernels cannot spare). An opaque value made
// before the loop can only stay in a register or be reloaded from the stack, which is free there.
[[gnu::always_inline]] inline __m256i opaque(__m256i v) {
  asm("" : "+x"(v));
  return v;
}
[[gnu::always_inline]] inline __m128i opaque(__m128i v) {
  asm("" : "+x"(v));
  return v;
}

// Streaming weights from DRAM at full speed needs about latency x bandwidth in flight
// (~150 ns x 11 GB/s = 1.7 KB), but a decode loop's out-of-order window spans only a few blocks:
// without help the kernels streamed a 1 GiB matrix at 5-7 GB/s against 12.4 GB/s for a plain
// read. So they prefetch every cache line of the block 4 KiB ahead (10.4-11.9 GB/s for Q4_K, Q5_K
// and Q6_K; 8 KiB measured the same). Past the end of a row this touches the next row, the one a
// mat-vec reads next; prefetches never fault.
inline constexpr size_t kPrefetchDistance = 4096;

template <size_t kBlockBytes>
[[gnu::always_inline]] inline void prefetch_ahead(const uint8_t* block) {
  for (size_t offset = 0; offset < kBlockBytes; offset += 64)
    _mm_prefetch(reinterpret_cast<const char*>(block + kPrefetchDistance + offset), _MM_HINT_T0);
}

// Offsets into a Q8_K block.
inline constexpr size_t kQ8KQs = offsetof(BlockQ8_K, qs);
inline constexpr size_t kQ8KBsums = offsetof(BlockQ8_K, bsums);

[[gnu::always_inline]] inline float load_f32(const uint8_t* p) {
  float value;
  std::memcpy(&value, p, sizeof value);
  return value;
}

[[gnu::always_inline]] inline float load_fp16(const uint8_t* p) {
  uint16_t half;
  std::memcpy(&half, p, sizeof half);
  return _cvtsh_ss(half);
}

[[gnu::always_inline]] inline __m256i load_256(const uint8_t* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}

[[gnu::always_inline]] inline __m128i load_128(const uint8_t* p) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
}

// Sum of the 8 lanes, always in the same order (the result must not depend on anything else).
[[gnu::always_inline]] inline float hsum(__m256 v) {
  __m128 sum = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  sum = _mm_add_ps(sum, _mm_movehl_ps(sum, sum));
  sum = _mm_add_ss(sum, _mm_movehdup_ps(sum));
  return _mm_cvtss_f32(sum);
}

// The two fp16 values at p (d and dmin of the type-1 formats) as floats in lanes 0 and 1.
[[gnu::always_inline]] inline __m128 load_fp16_pair(const uint8_t* p) {
  uint32_t halves;
  std::memcpy(&halves, p, sizeof halves);
  return _mm_cvtph_ps(_mm_cvtsi32_si128(int(halves)));
}

// pshufb masks that turn bytes held in both 128-bit halves into i16 lanes, either zero-extended
// (byte in the low half of the lane; unsigned scales) or times 256 (byte in the high half, sign
// included; signed scales, the factor being taken out in the float scale):
//   rows 0-7:   quarter k of a 16-weight-sub-block format: the low half's lanes get byte 2k, the
//               high half's byte 2k + 1 (the two sub-blocks of a 32-weight quarter)
//   rows 8-15:  sub-block k - 8 of a 32-weight-sub-block format: every lane gets byte k - 8
//   row 16:     bytes 0-15 in order over the 16 lanes (one per bsum)
//   row 17:     byte 8 + lane / 2 (Q4_K/Q5_K minimum codes, one per pair of bsums)
inline constexpr int kQuarterMask = 0, kSubBlockMask = 8, kAllMask = 16, kMinPairsMask = 17;

struct LaneMasks {
  alignas(32) uint8_t rows[18][32];
  constexpr explicit LaneMasks(int value_half) : rows() {
    for (int lane = 0; lane < 16; ++lane) {
      uint8_t pick[18];
      for (int k = 0; k < 8; ++k) {
        pick[kQuarterMask + k] = uint8_t(2 * k + lane / 8);
        pick[kSubBlockMask + k] = uint8_t(k);
      }
      pick[kAllMask] = uint8_t(lane);
      pick[kMinPairsMask] = uint8_t(8 + lane / 2);
      for (int row = 0; row < 18; ++row) {
        rows[row][2 * lane + value_half] = pick[row];
        rows[row][2 * lane + 1 - value_half] = 0x80;  // pshufb writes zero
      }
    }
  }
};
inline constexpr LaneMasks kZeroExtendMasks(0);
inline constexpr LaneMasks kTimes256Masks(1);

[[gnu::always_inline]] inline __m256i zero_extend_mask(int row) {
  return _mm256_load_si256(reinterpret_cast<const __m256i*>(kZeroExtendMasks.rows[row]));
}
[[gnu::always_inline]] inline __m256i times_256_mask(int row) {
  return _mm256_load_si256(reinterpret_cast<const __m256i*>(kTimes256Masks.rows[row]));
}

// The Q4_K/Q5_K 12-byte scale field (k_scales.h) at p, unpacked in-register to the bytes
// sc[0..7], m[0..7], in both 128-bit halves. Reads 16 bytes from p (the field and the 4 bytes
// after it, which both formats have).
[[gnu::always_inline]] inline __m256i unpack_k_scales(const uint8_t* p) {
  const __m128i raw = load_128(p);
  // Dwords [w0, w2, w1, w2]: sc[0..3] = w0 & 63, low bits of sc[4..7] = w2 & 15,
  // m[0..3] = w1 & 63, low bits of m[4..7] = (w2 >> 4) & 15.
  const __m128i lows =
      _mm_shuffle_epi8(raw, _mm_setr_epi8(0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 8, 9, 10, 11));
  const __m128i low = _mm_and_si128(_mm_srlv_epi32(lows, _mm_setr_epi32(0, 0, 0, 4)),
                                    _mm_setr_epi32(0x3f3f3f3f, 0x0f0f0f0f, 0x3f3f3f3f, 0x0f0f0f0f));
  // Dwords [0, w0, 0, w1]: bits 6-7 of each byte are bits 4-5 of sc[4..7] and m[4..7].
  const __m128i highs = _mm_shuffle_epi8(
      raw, _mm_setr_epi8(-128, -128, -128, -128, 0, 1, 2, 3, -128, -128, -128, -128, 4, 5, 6, 7));
  const __m128i high = _mm_and_si128(_mm_srli_epi32(highs, 2), _mm_set1_epi8(0x30));
  return _mm256_broadcastsi128_si256(_mm_or_si128(low, high));
}

// The float step of a type-1 super-block (Q2_K, Q4_K, Q5_K) for one column:
//   acc + sums * (d * xd) - min_sums * (dmin * xd)
// with d, dmin in lanes 0 and 1 of d_dmin. `lane1` is _mm256_set1_epi32(1), made opaque by the
// caller (it selects dmin * xd for the broadcast).
[[gnu::always_inline]] inline __m256 accumulate_type1(__m256 acc, __m128 d_dmin, float xd,
                                                      __m256i sums, __m256i min_sums,
                                                      __m256i lane1) {
  const __m128 scaled = _mm_mul_ps(d_dmin, _mm_set1_ps(xd));
  acc = _mm256_fmadd_ps(_mm256_broadcastss_ps(scaled), _mm256_cvtepi32_ps(sums), acc);
  return _mm256_fnmadd_ps(_mm256_permutevar8x32_ps(_mm256_castps128_ps256(scaled), lane1),
                          _mm256_cvtepi32_ps(min_sums), acc);
}

// The float step of a Q6_K super-block for one column: the quants' -32 offset taken out through
// the bsums (`scales`: the 16 sub-block scales as i16), then acc + total * (d * xd).
[[gnu::always_inline]] inline __m256 accumulate_q6_k(__m256 acc, float d, const uint8_t* column,
                                                     __m256i sums, __m256i scales) {
  const __m256i offsets = _mm256_madd_epi16(load_256(column + kQ8KBsums), scales);
  const __m256i total = _mm256_sub_epi32(sums, _mm256_slli_epi32(offsets, 5));
  return _mm256_fmadd_ps(_mm256_set1_ps(d * load_f32(column)), _mm256_cvtepi32_ps(total), acc);
}

// Every i16 lane of each 128-bit half gets element k (0..7) of that half.
[[gnu::always_inline]] inline __m256i broadcast_i16(__m256i v, int k) {
  return _mm256_shuffle_epi8(v, _mm256_set1_epi16(int16_t(0x0100 + 0x0202 * k)));
}

// The low half gets element 2k of the low half, the high half element 2k + 1 of the high half:
// the scales of a 32-weight chunk made of two 16-weight sub-blocks. k in 0..3.
[[gnu::always_inline]] inline __m256i broadcast_i16_pair(__m256i v, int k) {
  return _mm256_shuffle_epi8(v, _mm256_setr_m128i(_mm_set1_epi16(int16_t(0x0100 + 0x0404 * k)),
                                                  _mm_set1_epi16(int16_t(0x0302 + 0x0404 * k))));
}

// 32 unsigned quants times 32 int8 activations, summed in pairs (i16, exact while
// q * 127 * 2 < 32768, true for q < 128) then weighted by `scales` (i16 pairs into i32).
[[gnu::always_inline]] inline __m256i scaled_dot(__m256i quants, const uint8_t* activations,
                                                 __m256i scales) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(quants, load_256(activations)), scales);
}

// Runs kernel.template operator()<k>(first_column) over groups of 4 columns, then one group of the
// remaining 1-3. A kernel handles each column of a group with the same instructions in the same
// order whatever k is, so a column's bits do not depend on n_cols.
template <class Kernel>
[[gnu::always_inline]] inline void for_each_column_group(int n_cols, const Kernel& kernel) {
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
