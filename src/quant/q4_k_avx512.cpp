// Q4_K dot products on AVX-512 with VNNI, bit for bit the AVX2 kernel's (q4_k_avx2.cpp): a
// CPU runs one of the two for decode and prefill alike, and a test holds them to equality.
//
// The AVX2 kernel's integer lanes are exact: lane k of a super-block's sums is
// sum over sub-blocks j of scale_j * (the 4 products 4k..4k+3 of sub-block j), whatever the
// instructions. Here one zmm holds a 64-byte group's two sub-blocks (low nibbles in the low
// half, high nibbles in the high half, against the group's 64 activations); one vpdpbusd makes
// their 16 sums of 4 products, and one vpdpwssd multiplies them by the two scales and adds them
// up (each sum fits the low int16 of its lane, |sum| <= 4 * 15 * 128, and a scale as int32 is
// the int16 pair (scale, 0)): 2 uops per column and group where maddubs, madd and adds take 6.
// The halves are added once per super-block; the float step (accumulate_type1) and the lane
// sum are the AVX2 kernel's. What columns share (scales, nibbles) is decoded once per
// super-block, so the gain is prefill's: 1.2-1.3x on 4 columns, ~1.1x on one
// (bench/vec_dot_kquant_bench.cpp).
#include <immintrin.h>

#include "quant/k_quant_avx2.h"
#include "quant/q4_k.h"

namespace strata {
namespace {

using namespace kquant::avx2;

template <int kCols>
void dot_q4_k(int64_t n_blocks, const uint8_t* w, const uint8_t* x, size_t x_stride, float* out) {
  const __m512i low_nibbles = _mm512_set1_epi8(0x0f);
  const __m256i lane1 = opaque(_mm256_set1_epi32(1));
  // The int32 scale of sub-blocks 2g (low half) and 2g + 1 (high half).
  __m512i scale_picks[4];
  for (int g = 0; g < 4; ++g)
    scale_picks[g] = _mm512_inserti64x4(_mm512_zextsi256_si512(_mm256_set1_epi32(2 * g)),
                                        _mm256_set1_epi32(2 * g + 1), 1);
  __m256 acc[kCols];
  for (int c = 0; c < kCols; ++c) acc[c] = _mm256_setzero_ps();

  for (int64_t b = 0; b < n_blocks; ++b, w += sizeof(BlockQ4_K)) {
    prefetch_ahead<sizeof(BlockQ4_K)>(w);
    const __m256i codes = unpack_k_scales(w + offsetof(BlockQ4_K, scales));
    const __m256i mins = _mm256_shuffle_epi8(codes, zero_extend_mask(kMinPairsMask));
    const __m512i scales =
        _mm512_zextsi256_si512(_mm256_cvtepu8_epi32(_mm256_castsi256_si128(codes)));
    const uint8_t* qs = w + offsetof(BlockQ4_K, qs);
    const uint8_t* xb[kCols];
    __m512i sums[kCols];
    for (int c = 0; c < kCols; ++c) {
      xb[c] = x + c * x_stride + b * sizeof(BlockQ8_K);
      sums[c] = _mm512_setzero_si512();
    }
    for (int g = 0; g < 4; ++g) {
      const __m512i bits = _mm512_broadcast_i64x4(load_256(qs + 32 * g));
      const __m512i quants =
          _mm512_and_si512(_mm512_mask_srli_epi16(bits, 0xffff0000u, bits, 4), low_nibbles);
      const __m512i scale = _mm512_permutexvar_epi32(scale_picks[g], scales);
      for (int c = 0; c < kCols; ++c) {
        const __m512i activations = _mm512_loadu_si512(xb[c] + kQ8KQs + 64 * g);
        const __m512i dots = _mm512_dpbusd_epi32(_mm512_setzero_si512(), quants, activations);
        sums[c] = _mm512_dpwssd_epi32(sums[c], dots, scale);
      }
    }
    const __m128 d_dmin = load_fp16_pair(w + offsetof(BlockQ4_K, d));
    for (int c = 0; c < kCols; ++c) {
      const __m256i lanes =
          _mm256_add_epi32(_mm512_castsi512_si256(sums[c]), _mm512_extracti64x4_epi64(sums[c], 1));
      const __m256i min_sums = _mm256_madd_epi16(load_256(xb[c] + kQ8KBsums), mins);
      acc[c] = accumulate_type1(acc[c], d_dmin, load_f32(xb[c]), lanes, min_sums, lane1);
    }
  }
  for (int c = 0; c < kCols; ++c) out[c] = hsum(acc[c]);
}

}  // namespace

void vec_dot_q4_k_avx512(int64_t n, const void* w, const void* x, size_t x_stride, int n_cols,
                         float* out) {
  const auto* weights = static_cast<const uint8_t*>(w);
  const auto* columns = static_cast<const uint8_t*>(x);
  for_each_column_group(n_cols, [&]<int kCols>(int c) {
    dot_q4_k<kCols>(n / 256, weights, columns + c * x_stride, x_stride, out + c);
  });
}

}  // namespace strata
