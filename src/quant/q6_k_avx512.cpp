// Q6_K dot products on AVX-512 with VNNI, bit for bit the AVX2 kernel's (q6_k_avx2.cpp): a CPU
// runs one of the two for decode and prefill alike, and a test holds them to equality.
//
// The AVX2 kernel's integer lanes are exact: lane l of a super-block's sums is, over the eight
// 32-weight quarters, scale * (4 products) of the 16-weight sub-block that lane's bytes fall in,
// minus 32 * sum_s scale_s * bsums_s. Here one zmm holds two quarters (64 quants against 64
// consecutive activations, four sub-blocks in its four 128-bit lanes); one vpdpbusd makes 16
// sums of 4 products and one vpdpwssd multiplies them by the four signed scales and adds them
// up (a sum fits the low int16 of its lane, |sum| <= 4 * 63 * 128, and each scale is given as
// the int16 pair (scale, 0)): 2 uops per column and pair of quarters where the AVX2 kernel
// spends 6. The register's halves are added once per super-block; the offset, float step and
// lane sum are the AVX2 kernel's.
#include <immintrin.h>

#include "quant/k_quant_avx2.h"
#include "quant/q6_k.h"

namespace strata {
namespace {

using namespace kquant::avx2;

// Quarters 2j and 2j + 1 of half h: 6-bit quants, in activation order. ql holds the low 4 bits
// (quarters 0 and 1 in the low nibbles of its two 32-byte rows, 2 and 3 in the high nibbles),
// qh bits 4-5 (quarter k in bits 2k, 2k + 1).
struct Q6KHalf {
  __m512i pair[2];
};

Q6KHalf decode_half(const uint8_t* ql, const uint8_t* qh) {
  const __m512i low_nibbles = _mm512_set1_epi8(0x0f), bits45 = _mm512_set1_epi8(0x30);
  const __m512i low = _mm512_loadu_si512(ql);
  const __m512i high = _mm512_broadcast_i64x4(load_256(qh));
  // Shift counts per half (16-bit lanes 0-15, then 16-31): qh's bits 2k, 2k + 1 to bits 4-5.
  const __m512i left_4_2 = _mm512_inserti64x4(_mm512_set1_epi16(4), _mm256_set1_epi16(2), 1);
  const __m512i right_0_2 = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(2), 1);
  return {{
      _mm512_or_si512(_mm512_and_si512(low, low_nibbles),
                      _mm512_and_si512(_mm512_sllv_epi16(high, left_4_2), bits45)),
      _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(low, 4), low_nibbles),
                      _mm512_and_si512(_mm512_srlv_epi16(high, right_0_2), bits45)),
  }};
}

template <int kCols>
void dot_q6_k(int64_t n_blocks, const uint8_t* w, const uint8_t* x, size_t x_stride, float* out) {
  // Sub-blocks 4m .. 4m + 3, one per 128-bit lane, for the pair of quarters m = 2h + j.
  __m512i scale_picks[4];
  for (int m = 0; m < 4; ++m)
    scale_picks[m] = _mm512_setr_epi32(4 * m, 4 * m, 4 * m, 4 * m, 4 * m + 1, 4 * m + 1, 4 * m + 1,
                                       4 * m + 1, 4 * m + 2, 4 * m + 2, 4 * m + 2, 4 * m + 2,
                                       4 * m + 3, 4 * m + 3, 4 * m + 3, 4 * m + 3);
  __m256 acc[kCols];
  for (int c = 0; c < kCols; ++c) acc[c] = _mm256_setzero_ps();

  for (int64_t b = 0; b < n_blocks; ++b, w += sizeof(BlockQ6_K)) {
    prefetch_ahead<sizeof(BlockQ6_K)>(w);
    const uint8_t* scale_bytes = w + offsetof(BlockQ6_K, scales);
    // The 16 signed scales as int16 pairs (scale, 0).
    const __m512i scales = _mm512_cvtepu16_epi32(_mm256_cvtepi8_epi16(load_128(scale_bytes)));
    const uint8_t* xb[kCols];
    __m512i sums[2][kCols];  // one per half: two dependency chains, not one of four
    for (int c = 0; c < kCols; ++c) {
      xb[c] = x + c * x_stride + b * sizeof(BlockQ8_K);
      sums[0][c] = sums[1][c] = _mm512_setzero_si512();
    }
    for (int h = 0; h < 2; ++h) {
      const Q6KHalf half =
          decode_half(w + offsetof(BlockQ6_K, ql) + 64 * h, w + offsetof(BlockQ6_K, qh) + 32 * h);
      for (int j = 0; j < 2; ++j) {
        const __m512i scale = _mm512_permutexvar_epi32(scale_picks[2 * h + j], scales);
        for (int c = 0; c < kCols; ++c) {
          const __m512i activations = _mm512_loadu_si512(xb[c] + kQ8KQs + 128 * h + 64 * j);
          const __m512i dots =
              _mm512_dpbusd_epi32(_mm512_setzero_si512(), half.pair[j], activations);
          sums[h][c] = _mm512_dpwssd_epi32(sums[h][c], dots, scale);
        }
      }
    }
    const __m256i all_scales = _mm256_cvtepi8_epi16(load_128(scale_bytes));
    const float d = load_fp16(w + offsetof(BlockQ6_K, d));
    for (int c = 0; c < kCols; ++c) {
      const __m512i both = _mm512_add_epi32(sums[0][c], sums[1][c]);
      const __m256i lanes =
          _mm256_add_epi32(_mm512_castsi512_si256(both), _mm512_extracti64x4_epi64(both, 1));
      acc[c] = accumulate_q6_k(acc[c], d, xb[c], lanes, all_scales);
    }
  }
  for (int c = 0; c < kCols; ++c) out[c] = hsum(acc[c]);
}

}  // namespace

void vec_dot_q6_k_avx512(int64_t n, const void* w, const void* x, size_t x_stride, int n_cols,
                         float* out) {
  const auto* weights = static_cast<const uint8_t*>(w);
  const auto* columns = static_cast<const uint8_t*>(x);
  for_each_column_group(n_cols, [&]<int kCols>(int c) {
    dot_q6_k<kCols>(n / 256, weights, columns + c * x_stride, x_stride, out + c);
  });
}

}  // namespace strata
