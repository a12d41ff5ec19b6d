// AVX2 dot products of Q5_K weights with Q8_K activations (layout in q5_k.cpp): Q4_K's kernel
// with the fifth bit of each quant OR-ed in from qh (bit j of qh[l] for weight 32j + l; qh is
// shifted right by 2 per group so the two bits needed are always bits 0 and 1).
#include "cpu/kernels/simd_kernels.h"

#include "cpu/kernels/k_quant_avx2.h"
#include "quant/q5_k.h"

namespace strata {
namespace {

using namespace kquant::avx2;

template <int kCols>
void dot_q5_k(int64_t n_blocks, const uint8_t* w, const uint8_t* x, size_t x_stride, float* out) {
  const __m256i low_nibbles = opaque(_mm256_set1_epi8(0x0f));
  const __m256i bit4 = opaque(_mm256_set1_epi8(0x10));
  const __m256i lane1 = opaque(_mm256_set1_epi32(1));
  __m256 acc[kCols];
  for (int c = 0; c < kCols; ++c) acc[c] = _mm256_setzero_ps();

  for (int64_t b = 0; b < n_blocks; ++b, w += sizeof(BlockQ5_K)) {
    prefetch_ahead<sizeof(BlockQ5_K)>(w);
    const __m256i codes = unpack_k_scales(w + offsetof(BlockQ5_K, scales));
    const __m256i mins = _mm256_shuffle_epi8(codes, zero_extend_mask(kMinPairsMask));
    const uint8_t* qs = w + offsetof(BlockQ5_K, qs);
    __m256i high_bits = load_256(w + offsetof(BlockQ5_K, qh));
    const uint8_t* xb[kCols];
    __m256i sums[kCols];
    for (int c = 0; c < kCols; ++c) {
      xb[c] = x + c * x_stride + b * sizeof(BlockQ8_K);
      sums[c] = _mm256_setzero_si256();
    }
    for (int g = 0; g < 4; ++g) {
      const __m256i bits = load_256(qs + 32 * g);
      const __m256i q_low =
          _mm256_or_si256(_mm256_and_si256(bits, low_nibbles),
                          _mm256_and_si256(_mm256_slli_epi16(high_bits, 4), bit4));
      const __m256i q_high =
          _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(bits, 4), low_nibbles),
                          _mm256_and_si256(_mm256_slli_epi16(high_bits, 3), bit4));
      high_bits = _mm256_srli_epi16(high_bits, 2);
      const __m256i scale_low = _mm256_shuffle_epi8(codes, zero_extend_mask(kSubBlockMask + 2 * g));
      const __m256i scale_high =
          _mm256_shuffle_epi8(codes, zero_extend_mask(kSubBlockMask + 2 * g + 1));
      for (int c = 0; c < kCols; ++c) {
        const uint8_t* q8 = xb[c] + kQ8KQs + 64 * g;
        const __m256i low = scaled_dot(q_low, q8, scale_low);
        const __m256i high = scaled_dot(q_high, q8 + 32, scale_high);
        sums[c] = _mm256_add_epi32(sums[c], _mm256_add_epi32(low, high));
      }
    }
    const __m128 d_dmin = load_fp16_pair(w + offsetof(BlockQ5_K, d));
    for (int c = 0; c < kCols; ++c) {
      const __m256i min_sums = _mm256_madd_epi16(load_256(xb[c] + kQ8KBsums), mins);
      acc[c] = accumulate_type1(acc[c], d_dmin, load_f32(xb[c]), sums[c], min_sums, lane1);
    }
  }
  for (int c = 0; c < kCols; ++c) out[c] = hsum(acc[c]);
}

}  // namespace

void vec_dot_q5_k_avx2(int64_t n, const void* w, const void* x, size_t x_stride, int n_cols,
                       float* out) {
  const auto* weights = static_cast<const uint8_t*>(w);
  const auto* columns = static_cast<const uint8_t*>(x);
  for_each_column_group(n_cols, [&]<int kCols>(int c) {
    dot_q5_k<kCols>(n / 256, weights, columns + c * x_stride, x_stride, out + c);
  });
}

}  // namespace strata
