// AVX2 dot products of Q2_K weights with Q8_K activations (layout in q2_k.cpp). One 32-byte load
// of qs per half holds four 32-weight quarters (bit pairs 0-1 .. 6-7); a quarter spans two
// 16-weight sub-blocks, one per 128-bit lane. The minimum terms are sum_s m[s] * bsums[s], one
// madd per super-block.
#include "cpu/kernels/simd_kernels.h"

#include "cpu/kernels/k_quant_avx2.h"
#include "quant/q2_k.h"

namespace strata {
namespace {

using namespace kquant::avx2;

template <int kCols>
void dot_q2_k(int64_t n_blocks, const uint8_t* w, const uint8_t* x, size_t x_stride, float* out) {
  const __m256i low_nibbles = opaque(_mm256_set1_epi8(0x0f));
  const __m256i two_bits = opaque(_mm256_set1_epi8(3));
  const __m256i lane1 = opaque(_mm256_set1_epi32(1));
  __m256 acc[kCols];
  for (int c = 0; c < kCols; ++c) acc[c] = _mm256_setzero_ps();

  for (int64_t b = 0; b < n_blocks; ++b, w += sizeof(BlockQ2_K)) {
    prefetch_ahead<sizeof(BlockQ2_K)>(w);
    // Scale codes (low nibbles) and minimum codes (high nibbles), as bytes in both halves.
    const __m256i codes = _mm256_broadcastsi128_si256(load_128(w + offsetof(BlockQ2_K, scales)));
    const __m256i scale_codes = _mm256_and_si256(codes, low_nibbles);
    const __m256i mins = _mm256_shuffle_epi8(
        _mm256_and_si256(_mm256_srli_epi16(codes, 4), low_nibbles), zero_extend_mask(kAllMask));
    const uint8_t* xb[kCols];
    __m256i sums[kCols];
    for (int c = 0; c < kCols; ++c) {
      xb[c] = x + c * x_stride + b * sizeof(BlockQ8_K);
      sums[c] = _mm256_setzero_si256();
    }
    for (int h = 0; h < 2; ++h) {
      const __m256i bits = load_256(w + offsetof(BlockQ2_K, qs) + 32 * h);
      for (int j = 0; j < 4; ++j) {
        const __m256i quants = _mm256_and_si256(_mm256_srli_epi16(bits, 2 * j), two_bits);
        const __m256i scale =
            _mm256_shuffle_epi8(scale_codes, zero_extend_mask(kQuarterMask + 4 * h + j));
        for (int c = 0; c < kCols; ++c) {
          const __m256i dot = scaled_dot(quants, xb[c] + kQ8KQs + 128 * h + 32 * j, scale);
          sums[c] = _mm256_add_epi32(sums[c], dot);
        }
      }
    }
    const __m128 d_dmin = load_fp16_pair(w + offsetof(BlockQ2_K, d));
    for (int c = 0; c < kCols; ++c) {
      const __m256i min_sums = _mm256_madd_epi16(load_256(xb[c] + kQ8KBsums), mins);
      acc[c] = accumulate_type1(acc[c], d_dmin, load_f32(xb[c]), sums[c], min_sums, lane1);
    }
  }
  for (int c = 0; c < kCols; ++c) out[c] = hsum(acc[c]);
}

}  // namespace

void vec_dot_q2_k_avx2(int64_t n, const void* w, const void* x, size_t x_stride, int n_cols,
                       float* out) {
  const auto* weights = static_cast<const uint8_t*>(w);
  const auto* columns = static_cast<const uint8_t*>(x);
  for_each_column_group(n_cols, [&]<int kCols>(int c) {
    dot_q2_k<kCols>(n / 256, weights, columns + c * x_stride, x_stride, out + c);
  });
}

}  // namespace strata
