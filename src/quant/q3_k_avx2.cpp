// AVX2 dot products of Q3_K weights with Q8_K activations (layout in q3_k.cpp). Quants are
// decoded unsigned, u = q + 4 in [0, 7] (low 2 bits from qs, third bit from hmask), so maddubs
// applies; the -4 offset becomes -4 * sum_s scale[s] * bsums[s], one madd per super-block. A
// 32-weight quarter spans two 16-weight sub-blocks, one per 128-bit lane.
#include "quant/k_quant_avx2.h"
#include "quant/k_scales.h"
#include "quant/q3_k.h"

namespace strata {
namespace {

using namespace kquant::avx2;

template <int kCols>
void dot_q3_k(int64_t n_blocks, const uint8_t* w, const uint8_t* x, size_t x_stride, float* out) {
  const __m256i two_bits = _mm256_set1_epi8(3);
  const __m256i bit2 = _mm256_set1_epi8(4);
  __m256 acc[kCols];
  for (int c = 0; c < kCols; ++c) acc[c] = _mm256_setzero_ps();

  for (int64_t b = 0; b < n_blocks; ++b, w += sizeof(BlockQ3_K)) {
    uint8_t codes[16];
    kquant::unpack_q3_k_scales(w + offsetof(BlockQ3_K, scales), codes);
    const __m128i scale_bytes = _mm_sub_epi8(load_128(codes), _mm_set1_epi8(32));
    const __m256i half_scales[2] = {
        _mm256_broadcastsi128_si256(_mm_cvtepi8_epi16(scale_bytes)),
        _mm256_broadcastsi128_si256(
            _mm_cvtepi8_epi16(_mm_unpackhi_epi64(scale_bytes, scale_bytes))),
    };
    const uint8_t* xb[kCols];
    __m256i sums[kCols];
    for (int c = 0; c < kCols; ++c) {
      xb[c] = x + c * x_stride + b * sizeof(BlockQ8_K);
      sums[c] = _mm256_setzero_si256();
    }
    // Bit 0 of every byte is the third bit of the current quarter; shifted right once a quarter.
    __m256i third_bits = load_256(w + offsetof(BlockQ3_K, hmask));
    for (int h = 0; h < 2; ++h) {
      const __m256i low_bits = load_256(w + offsetof(BlockQ3_K, qs) + 32 * h);
      for (int j = 0; j < 4; ++j) {
        const __m256i quants =
            _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(low_bits, 2 * j), two_bits),
                            _mm256_and_si256(_mm256_slli_epi16(third_bits, 2), bit2));
        third_bits = _mm256_srli_epi16(third_bits, 1);
        const __m256i scale = broadcast_i16_pair(half_scales[h], j);
        for (int c = 0; c < kCols; ++c) {
          const __m256i dot = scaled_dot(quants, xb[c] + kQ8KQs + 128 * h + 32 * j, scale);
          sums[c] = _mm256_add_epi32(sums[c], dot);
        }
      }
    }
    const __m256i all_scales = _mm256_cvtepi8_epi16(scale_bytes);
    const float d = load_fp16(w + offsetof(BlockQ3_K, d));
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
