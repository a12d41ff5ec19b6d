// AVX2 dot products of Q6_K weights with Q8_K activations (layout in q6_k.cpp). Per half of 128:
// two 32-byte loads of ql and one of qh give the four 32-weight quarters in activation order;
// a quarter spans two 16-weight sub-blocks, one per 128-bit lane, hence the paired scale
// broadcast. Quants stay unsigned (0..63, so maddubs cannot saturate) and the -32 offset becomes
// -32 * sum_s scales[s] * bsums[s], one madd per super-block.
#include "cpu/kernels/simd_kernels.h"

#include "cpu/kernels/k_quant_avx2.h"
#include "quant/q6_k.h"

namespace strata {
namespace {

using namespace kquant::avx2;

struct Q6KHalf {
  __m256i quarter[4];  // unsigned 6-bit quants of weights 32k..32k+31 of the half
};

Q6KHalf decode_half(const uint8_t* ql, const uint8_t* qh) {
  const __m256i low_nibbles = _mm256_set1_epi8(0x0f);
  const __m256i bits45 = _mm256_set1_epi8(0x30);
  const __m256i low0 = load_256(ql), low1 = load_256(ql + 32), high = load_256(qh);
  return {{
      _mm256_or_si256(_mm256_and_si256(low0, low_nibbles),
                      _mm256_and_si256(_mm256_slli_epi16(high, 4), bits45)),
      _mm256_or_si256(_mm256_and_si256(low1, low_nibbles),
                      _mm256_and_si256(_mm256_slli_epi16(high, 2), bits45)),
      _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(low0, 4), low_nibbles),
                      _mm256_and_si256(high, bits45)),
      _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(low1, 4), low_nibbles),
                      _mm256_and_si256(_mm256_srli_epi16(high, 2), bits45)),
  }};
}

template <int kCols>
void dot_q6_k(int64_t n_blocks, const uint8_t* w, const uint8_t* x, size_t x_stride, float* out) {
  __m256 acc[kCols];
  for (int c = 0; c < kCols; ++c) acc[c] = _mm256_setzero_ps();

  for (int64_t b = 0; b < n_blocks; ++b, w += sizeof(BlockQ6_K)) {
    prefetch_ahead<sizeof(BlockQ6_K)>(w);
    const uint8_t* scale_bytes = w + offsetof(BlockQ6_K, scales);
    const uint8_t* xb[kCols];
    __m256i sums[kCols];
    for (int c = 0; c < kCols; ++c) {
      xb[c] = x + c * x_stride + b * sizeof(BlockQ8_K);
      sums[c] = _mm256_setzero_si256();
    }
    for (int h = 0; h < 2; ++h) {
      const Q6KHalf half =
          decode_half(w + offsetof(BlockQ6_K, ql) + 64 * h, w + offsetof(BlockQ6_K, qh) + 32 * h);
      const __m256i scales = _mm256_broadcastsi128_si256(_mm_cvtepi8_epi16(
          _mm_loadl_epi64(reinterpret_cast<const __m128i*>(scale_bytes + 8 * h))));
      for (int k = 0; k < 4; ++k) {
        const __m256i scale = broadcast_i16_pair(scales, k);
        for (int c = 0; c < kCols; ++c) {
          const __m256i dot = scaled_dot(half.quarter[k], xb[c] + kQ8KQs + 128 * h + 32 * k, scale);
          sums[c] = _mm256_add_epi32(sums[c], dot);
        }
      }
    }
    const __m256i all_scales = _mm256_cvtepi8_epi16(load_128(scale_bytes));
    const float d = load_fp16(w + offsetof(BlockQ6_K, d));
    for (int c = 0; c < kCols; ++c) {
      acc[c] = accumulate_q6_k(acc[c], d, xb[c], sums[c], all_scales);
    }
  }
  for (int c = 0; c < kCols; ++c) out[c] = hsum(acc[c]);
}

}  // namespace

void vec_dot_q6_k_avx2(int64_t n, const void* w, const void* x, size_t x_stride, int n_cols,
                       float* out) {
  const auto* weights = static_cast<const uint8_t*>(w);
  const auto* columns = static_cast<const uint8_t*>(x);
  for_each_column_group(n_cols, [&]<int kCols>(int c) {
    dot_q6_k<kCols>(n / 256, weights, columns + c * x_stride, x_stride, out + c);
  });
}

}  // namespace strata
