// AVX2 dot products of Q4_K weights with Q8_K activations (layout in q4_k.cpp). Each 32-byte
// load of qs yields two sub-blocks (low and high nibbles) whose activations are the next 64 bytes
// of Q8_K, in order, so no lane shuffling is needed; the minimum terms are
// sum_j m[j] * (bsums[2j] + bsums[2j + 1]), one madd per super-block.
#include "cpu/kernels/simd_kernels.h"

#include "cpu/kernels/k_quant_avx2.h"
#include "quant/q4_k.h"

namespace strata {
namespace {

using namespace kquant::avx2;

template <int kCols>
void dot_q4_k(int64_t n_blocks, const uint8_t* w, const uint8_t* x, size_t x_stride, float* out) {
  const __m256i low_nibbles = opaque(_mm256_set1_epi8(0x0f));
  const __m256i lane1 = opaque(_mm256_set1_epi32(1));
  __m256 acc[kCols];
  for (int c = 0; c < kCols; ++c) acc[c] = _mm256_setzero_ps();

  for (int64_t b = 0; b < n_blocks; ++b, w += sizeof(BlockQ4_K)) {
    prefetch_ahead<sizeof(BlockQ4_K)>(w);
    const __m256i codes = unpack_k_scales(w + offsetof(BlockQ4_K, scales));
    const __m256i mins = _mm256_shuffle_epi8(codes, zero_extend_mask(kMinPairsMask));
    const uint8_t* qs = w + offsetof(BlockQ4_K, qs);
    const uint8_t* xb[kCols];
    __m256i sums[kCols];
    for (int c = 0; c < kCols; ++c) {
      xb[c] = x + c * x_stride + b * sizeof(BlockQ8_K);
      sums[c] = _mm256_setzero_si256();
    }
    for (int g = 0; g < 4; ++g) {
      const __m256i bits = load_256(qs + 32 * g);
      const __m256i q_low = _mm256_and_si256(bits, low_nibbles);
      const __m256i q_high = _mm256_and_si256(_mm256_srli_epi16(bits, 4), low_nibbles);
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
    const __m128 d_dmin = load_fp16_pair(w + offsetof(BlockQ4_K, d));
    for (int c = 0; c < kCols; ++c) {
      const __m256i min_sums = _mm256_madd_epi16(load_256(xb[c] + kQ8KBsums), mins);
      acc[c] = accumulate_type1(acc[c], d_dmin, load_f32(xb[c]), sums[c], min_sums, lane1);
    }
  }
  for (int c = 0; c < kCols; ++c) out[c] = hsum(acc[c]);
}

}  // namespace

void vec_dot_q4_k_avx2(int64_t n, const void* w, const void* x, size_t x_stride, int n_cols,
                       float* out) {
  const auto* weights = static_cast<const uint8_t*>(w);
  const auto* columns = static_cast<const uint8_t*>(x);
  for_each_column_group(n_cols, [&]<int kCols>(int c) {
    dot_q4_k<kCols>(n / 256, weights, columns + c * x_stride, x_stride, out + c);
  });
}

}  // namespace strata
