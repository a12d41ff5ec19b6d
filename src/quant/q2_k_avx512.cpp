// Q2_K dot products on AVX-512 with VNNI, bit for bit the AVX2 kernel's (q2_k_avx2.cpp), as
// q6_k_avx512.cpp does it for Q6_K: one zmm holds two 32-weight quarters (bit pairs 2j and
// 2j + 2 of a half's 32 bytes) against 64 consecutive activations, four 16-weight sub-blocks in
// its four 128-bit lanes; vpdpbusd makes 16 sums of 4 products (|sum| <= 4 * 3 * 128) and
// vpdpwssd scales and adds them (scale codes as int16 pairs (code, 0)). The register's halves
// are added once per super-block; the minimum terms and the float step are the AVX2 kernel's.
#include <immintrin.h>

#include "quant/k_quant_avx2.h"
#include "quant/q2_k.h"

namespace strata {
namespace {

using namespace kquant::avx2;

template <int kCols>
void dot_q2_k(int64_t n_blocks, const uint8_t* w, const uint8_t* x, size_t x_stride, float* out) {
  const __m256i low_nibbles = opaque(_mm256_set1_epi8(0x0f));
  const __m256i lane1 = opaque(_mm256_set1_epi32(1));
  const __m512i two_bits = _mm512_set1_epi8(3);
  // Sub-blocks 4m .. 4m + 3, one per 128-bit lane, for the pair of quarters m = 2h + j.
  __m512i scale_picks[4];
  for (int m = 0; m < 4; ++m)
    scale_picks[m] = _mm512_setr_epi32(4 * m, 4 * m, 4 * m, 4 * m, 4 * m + 1, 4 * m + 1, 4 * m + 1,
                                       4 * m + 1, 4 * m + 2, 4 * m + 2, 4 * m + 2, 4 * m + 2,
                                       4 * m + 3, 4 * m + 3, 4 * m + 3, 4 * m + 3);
  __m256 acc[kCols];
  for (int c = 0; c < kCols; ++c) acc[c] = _mm256_setzero_ps();

  for (int64_t b = 0; b < n_blocks; ++b, w += sizeof(BlockQ2_K)) {
    prefetch_ahead<sizeof(BlockQ2_K)>(w);
    // Scale codes (low nibbles) and minimum codes (high nibbles), as bytes in both halves.
    const __m128i code_bytes = load_128(w + offsetof(BlockQ2_K, scales));
    const __m256i codes = _mm256_broadcastsi128_si256(code_bytes);
    const __m256i mins = _mm256_shuffle_epi8(
        _mm256_and_si256(_mm256_srli_epi16(codes, 4), low_nibbles), zero_extend_mask(kAllMask));
    // The 16 scale codes as int16 pairs (code, 0).
    const __m512i scales =
        _mm512_cvtepu8_epi32(_mm_and_si128(code_bytes, _mm256_castsi256_si128(low_nibbles)));
    const uint8_t* xb[kCols];
    __m512i sums[2][kCols];  // one per half: two dependency chains, not one of four
    for (int c = 0; c < kCols; ++c) {
      xb[c] = x + c * x_stride + b * sizeof(BlockQ8_K);
      sums[0][c] = sums[1][c] = _mm512_setzero_si512();
    }
    for (int h = 0; h < 2; ++h) {
      const __m512i bits = _mm512_broadcast_i64x4(load_256(w + offsetof(BlockQ2_K, qs) + 32 * h));
      for (int j = 0; j < 4; j += 2) {
        // Bit pairs 2j in the low half, 2j + 2 in the high half.
        const __m512i shifts = _mm512_inserti64x4(_mm512_set1_epi16(int16_t(2 * j)),
                                                  _mm256_set1_epi16(int16_t(2 * j + 2)), 1);
        const __m512i quants = _mm512_and_si512(_mm512_srlv_epi16(bits, shifts), two_bits);
        const __m512i scale = _mm512_permutexvar_epi32(scale_picks[2 * h + j / 2], scales);
        for (int c = 0; c < kCols; ++c) {
          const __m512i activations = _mm512_loadu_si512(xb[c] + kQ8KQs + 128 * h + 32 * j);
          const __m512i dots = _mm512_dpbusd_epi32(_mm512_setzero_si512(), quants, activations);
          sums[h][c] = _mm512_dpwssd_epi32(sums[h][c], dots, scale);
        }
      }
    }
    const __m128 d_dmin = load_fp16_pair(w + offsetof(BlockQ2_K, d));
    for (int c = 0; c < kCols; ++c) {
      const __m512i both = _mm512_add_epi32(sums[0][c], sums[1][c]);
      const __m256i lanes =
          _mm256_add_epi32(_mm512_castsi512_si256(both), _mm512_extracti64x4_epi64(both, 1));
      const __m256i min_sums = _mm256_madd_epi16(load_256(xb[c] + kQ8KBsums), mins);
      acc[c] = accumulate_type1(acc[c], d_dmin, load_f32(xb[c]), lanes, min_sums, lane1);
    }
  }
  for (int c = 0; c < kCols; ++c) out[c] = hsum(acc[c]);
}

}  // namespace

void vec_dot_q2_k_avx512(int64_t n, const void* w, const void* x, size_t x_stride, int n_cols,
                         float* out) {
  const auto* weights = static_cast<const uint8_t*>(w);
  const auto* columns = static_cast<const uint8_t*>(x);
  for_each_column_group(n_cols, [&]<int kCols>(int c) {
    dot_q2_k<kCols>(n / 256, weights, columns + c * x_stride, x_stride, out + c);
  });
}

}  // namespace strata
