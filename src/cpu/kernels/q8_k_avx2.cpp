// AVX2 quantization of activations to Q8_K (layout in q8_k.cpp), writing the scalar reference's
// bytes for every finite input: the same element sets the scale (the first of largest magnitude,
// found by a vector max and then a compare), each quant is the same float product iscale * x
// rounded by cvtps2dq, which rounds half to even as ggml's nearest_int does, and capped at 127.
// It runs once per activation row before every k-quant product; the scalar loop takes 35 us for a
// row of 8192, as long as streaming 350 KB of weights.
#include "cpu/kernels/simd_kernels.h"

#include "cpu/kernels/k_quant_avx2.h"
#include "quant/k_quant_common.h"
#include "quant/q8_k.h"

namespace strata {
namespace {

using namespace kquant::avx2;
using kquant::kSuperBlock;

// The first element of x[0..255] whose magnitude is the largest, with its sign.
float largest_magnitude(const float* x) {
  const __m256 magnitude_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  __m256 amax = _mm256_setzero_ps();
  for (int j = 0; j < 256; j += 8)
    amax = _mm256_max_ps(amax, _mm256_and_ps(_mm256_loadu_ps(x + j), magnitude_mask));
  __m128 half = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
  half = _mm_max_ps(half, _mm_movehl_ps(half, half));
  half = _mm_max_ss(half, _mm_movehdup_ps(half));
  const __m256 target = _mm256_broadcastss_ps(half);
  for (int j = 0; j < 256; j += 8) {
    const __m256 magnitudes = _mm256_and_ps(_mm256_loadu_ps(x + j), magnitude_mask);
    const int hits = _mm256_movemask_ps(_mm256_cmp_ps(magnitudes, target, _CMP_EQ_OQ));
    if (hits != 0) return x[j + __builtin_ctz(unsigned(hits))];
  }
  return 0.0f;  // all zero
}

// 32 quants from x[0..31]: round(iscale * x), at most 127, packed to int8 in order.
__m256i quantize_32(const float* x, __m256 iscale, __m256i cap) {
  __m256i q[4];
  for (int k = 0; k < 4; ++k) {
    const __m256 scaled = _mm256_mul_ps(iscale, _mm256_loadu_ps(x + 8 * k));
    q[k] = _mm256_min_epi32(_mm256_cvtps_epi32(scaled), cap);
  }
  // The packs work per 128-bit lane, leaving dwords in the order 0 4 1 5 2 6 3 7.
  const __m256i packed =
      _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
  return _mm256_permutevar8x32_epi32(packed, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

}  // namespace

void quantize_row_q8_k_avx2(const float* in, void* blocks, int64_t n) {
  const __m256i cap = _mm256_set1_epi32(127);
  const __m256i flip = _mm256_set1_epi8(int8_t(0x80));
  for (int64_t b = 0; b < n / kSuperBlock; ++b) {
    const float* x = in + b * kSuperBlock;
    BlockQ8_K block = {};
    const float max = largest_magnitude(x);
    if (max != 0.0f) {
      const float iscale = -127.0f / max;
      const __m256 iscale_lanes = _mm256_set1_ps(iscale);
      for (int j = 0; j < kSuperBlock; j += 32) {
        const __m256i q = quantize_32(x + j, iscale_lanes, cap);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(block.qs + j), q);
        // Sums of 8 bytes: psadbw of q + 128 against zero, then 8 * 128 less.
        alignas(32) uint64_t eights[4];
        _mm256_store_si256(reinterpret_cast<__m256i*>(eights),
                           _mm256_sad_epu8(_mm256_xor_si256(q, flip), _mm256_setzero_si256()));
        block.bsums[j / 16] = int16_t(int(eights[0] + eights[1]) - 16 * 128);
        block.bsums[j / 16 + 1] = int16_t(int(eights[2] + eights[3]) - 16 * 128);
      }
      block.d = 1 / iscale;
    }
    kquant::store(blocks, b, block);
  }
}

}  // namespace strata
