// AVX2 dot products of Q3_K weights with Q8_K activations (layout in q3_k.cpp). Quants are
// decoded unsigned, u = q + 4 in [0, 7] (low 2 bits from qs, third bit from hmask), so maddubs
// applies; the -4 offset becomes -4 * sum_s scale[s] * bsums[s], one madd per super-block. A
// 32-weight quarter spans two 16-weight sub-blocks, one per 128-bit lane.
//
// Decode is most of the work here, so it keeps vector operations few: per half, one shift splits
// qs and hmask into nibbles, and the 2-bit fields and third bits of the four quarters come from
// masks and 16-entry pshufb lookups (nibble -> bits 2j..2j+1, nibble -> 4 * bit j). The
// scales are decoded in-register and broadcast to i16 lanes as scale * 256 by pshufb alone (the
// byte lands in the high half, sign included); the factor 256 leaves every integer sum exact and
// far from overflow, and is taken out exactly in the float scale.
#include "cpu/kernels/simd_kernels.h"

#include "cpu/kernels/k_quant_avx2.h"
#include "quant/q3_k.h"

namespace strata {
namespace {

using namespace kquant::avx2;

// Everything the loop needs besides the data, made once per call (see opaque()).
struct Constants {
  __m256i two_bits = opaque(_mm256_set1_epi8(3));
  __m256i low_nibbles = opaque(_mm256_set1_epi8(0x0f));
  __m256i third_bit[4];  // lookup: nibble n -> 4 * bit j of n
  __m256i shift_right_2 = opaque(_mm256_setr_epi8(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 0,
                                                  0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3));
  // Scale decoding (see decode_scales).
  __m128i pick_lows = opaque(_mm_setr_epi8(2, 3, 4, 5, 6, 7, 8, 9, 2, 3, 4, 5, 6, 7, 8, 9));
  __m128i pick_highs =
      opaque(_mm_setr_epi8(10, 11, 12, 13, 10, 11, 12, 13, 10, 11, 12, 13, 10, 11, 12, 13));
  __m128i low_shifts = opaque(_mm_setr_epi32(0, 0, 4, 4));
  __m128i high_shifts = opaque(_mm_setr_epi32(0, 2, 4, 6));
  __m128i low_nibbles_128 = opaque(_mm_set1_epi8(0x0f));
  __m128i two_bits_128 = opaque(_mm_set1_epi8(3));
  __m128i bias = opaque(_mm_set1_epi8(32));

  Constants() {
    for (int j = 0; j < 4; ++j) {
      alignas(32) uint8_t table[32];
      for (int i = 0; i < 32; ++i) table[i] = uint8_t(((i % 16) >> j & 1) * 4);
      third_bit[j] = opaque(_mm256_load_si256(reinterpret_cast<const __m256i*>(table)));
    }
  }
};

// The 16 sub-block scales, c[s] - 32, as signed bytes in both 128-bit halves.
__m256i decode_scales(const uint8_t* block, const Constants& k) {
  // The 12 scale bytes sit at offsets 96-107 of the 110-byte block; 16 bytes from offset 94 stay
  // inside it. Dwords: low nibbles from bytes 96-103, high bits from bytes 104-107.
  const __m128i raw = load_128(block + offsetof(BlockQ3_K, scales) - 2);
  const __m128i low = _mm_and_si128(
      _mm_srlv_epi32(_mm_shuffle_epi8(raw, k.pick_lows), k.low_shifts), k.low_nibbles_128);
  const __m128i high = _mm_slli_epi32(
      _mm_and_si128(_mm_srlv_epi32(_mm_shuffle_epi8(raw, k.pick_highs), k.high_shifts),
                    k.two_bits_128),
      4);
  return _mm256_broadcastsi128_si256(_mm_sub_epi8(_mm_or_si128(low, high), k.bias));
}

template <int kCols>
void dot_q3_k(int64_t n_blocks, const uint8_t* w, const uint8_t* x, size_t x_stride, float* out) {
  const Constants k;
  __m256 acc[kCols];
  for (int c = 0; c < kCols; ++c) acc[c] = _mm256_setzero_ps();

  for (int64_t b = 0; b < n_blocks; ++b, w += sizeof(BlockQ3_K)) {
    prefetch_ahead<sizeof(BlockQ3_K)>(w);
    const __m256i scales = decode_scales(w, k);
    const __m256i hmask = load_256(w + offsetof(BlockQ3_K, hmask));
    // Third bits of half h: bits 4h..4h+3 of hmask, as a nibble per byte.
    const __m256i third_bits[2] = {_mm256_and_si256(hmask, k.low_nibbles),
                                   _mm256_and_si256(_mm256_srli_epi16(hmask, 4), k.low_nibbles)};
    const uint8_t* xb[kCols];
    __m256i sums[kCols];
    for (int c = 0; c < kCols; ++c) {
      xb[c] = x + c * x_stride + b * sizeof(BlockQ8_K);
      sums[c] = _mm256_setzero_si256();
    }
    for (int h = 0; h < 2; ++h) {
      const __m256i bits = load_256(w + offsetof(BlockQ3_K, qs) + 32 * h);
      const __m256i low_nibble = _mm256_and_si256(bits, k.low_nibbles);
      const __m256i high_nibble = _mm256_and_si256(_mm256_srli_epi16(bits, 4), k.low_nibbles);
      const __m256i low_bits[4] = {_mm256_and_si256(bits, k.two_bits),
                                   _mm256_shuffle_epi8(k.shift_right_2, low_nibble),
                                   _mm256_and_si256(high_nibble, k.two_bits),
                                   _mm256_shuffle_epi8(k.shift_right_2, high_nibble)};
      for (int j = 0; j < 4; ++j) {
        const __m256i quants =
            _mm256_or_si256(low_bits[j], _mm256_shuffle_epi8(k.third_bit[j], third_bits[h]));
        const __m256i scale = _mm256_shuffle_epi8(scales, times_256_mask(kQuarterMask + 4 * h + j));
        for (int c = 0; c < kCols; ++c) {
          const __m256i dot = scaled_dot(quants, xb[c] + kQ8KQs + 128 * h + 32 * j, scale);
          sums[c] = _mm256_add_epi32(sums[c], dot);
        }
      }
    }
    const __m256i all_scales = _mm256_shuffle_epi8(scales, times_256_mask(kAllMask));
    const float d = load_fp16(w + offsetof(BlockQ3_K, d)) * (1.0f / 256.0f);
    for (int c = 0; c < kCols; ++c) {
      const __m256i offsets = _mm256_madd_epi16(load_256(xb[c] + kQ8KBsums), all_scales);
      const __m256i total = _mm256_sub_epi32(sums[c], _mm256_slli_epi32(offsets, 2));
      acc[c] =
          _mm256_fmadd_ps(_mm256_set1_ps(d * load_f32(xb[c])), _mm256_cvtepi32_ps(total), acc[c]);
    }
  }
  for (int c = 0; c < kCols; ++c) out[c] = hsum(acc[c]);
}

}  // namespace

void vec_dot_q3_k_avx2(int64_t n, const void* w, const void* x, size_t x_stride, int n_cols,
                       float* out) {
  const auto* weights = static_cast<const uint8_t*>(w);
  const auto* columns = static_cast<const uint8_t*>(x);
  for_each_column_group(n_cols, [&]<int kCols>(int c) {
    dot_q3_k<kCols>(n / 256, weights, columns + c * x_stride, x_stride, out + c);
  });
}

}  // namespace strata
