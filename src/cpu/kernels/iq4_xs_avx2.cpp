// AVX2 dot products of IQ4_XS weights with Q8_K activations (layout in iq4_xs.cpp). A 32-byte
// load of qs holds two sub-blocks, one per 128-bit lane; pshufb looks the nibbles up in the code
// book, and one lane permute per sub-block puts its 32 weights in activation order. Code book
// values are signed, so maddubs takes |w| and the activations with w's sign (|w| * |x| <= 127 *
// 127, two of which fit in i16; needs activations > -128, which quantize_row_q8_k guarantees). The
// 6-bit sub-block codes are spread into bytes with pdep.
#include "cpu/kernels/simd_kernels.h"

#include "cpu/kernels/k_quant_avx2.h"
#include "quant/iq4_nl.h"
#include "quant/iq4_xs.h"

namespace strata {
namespace {

using namespace kquant::avx2;

// Codes minus 32 of the 8 sub-blocks as i16, in both halves. (Not the scale * 256 lanes of Q3_K:
// with this format's products, up to 2 * 127 * 127 per pair, they would overflow i32.)
__m256i decode_scales(const uint8_t* block) {
  uint16_t high;
  uint32_t low;
  std::memcpy(&high, block + offsetof(BlockIQ4_XS, scales_h), sizeof high);
  std::memcpy(&low, block + offsetof(BlockIQ4_XS, scales_l), sizeof low);
  const uint64_t codes =
      _pdep_u64(low, 0x0f0f0f0f0f0f0f0full) | _pdep_u64(high, 0x3030303030303030ull);
  const __m128i bytes = _mm_sub_epi8(_mm_cvtsi64_si128(int64_t(codes)), _mm_set1_epi8(32));
  return _mm256_broadcastsi128_si256(_mm_cvtepi8_epi16(bytes));
}

template <int kCols>
void dot_iq4_xs(int64_t n_blocks, const uint8_t* w, const uint8_t* x, size_t x_stride, float* out) {
  const __m256i low_nibbles = opaque(_mm256_set1_epi8(0x0f));
  const __m256i code_book =
      opaque(_mm256_broadcastsi128_si256(load_128(reinterpret_cast<const uint8_t*>(kIQ4NLValues))));
  __m256 acc[kCols];
  for (int c = 0; c < kCols; ++c) acc[c] = _mm256_setzero_ps();

  for (int64_t b = 0; b < n_blocks; ++b, w += sizeof(BlockIQ4_XS)) {
    prefetch_ahead<sizeof(BlockIQ4_XS)>(w);
    const __m256i scales = decode_scales(w);
    const uint8_t* xb[kCols];
    __m256i sums[kCols];
    for (int c = 0; c < kCols; ++c) {
      xb[c] = x + c * x_stride + b * sizeof(BlockQ8_K);
      sums[c] = _mm256_setzero_si256();
    }
    for (int p = 0; p < 4; ++p) {  // sub-blocks 2p and 2p + 1
      const __m256i bits = load_256(w + offsetof(BlockIQ4_XS, qs) + 32 * p);
      const __m256i low = _mm256_shuffle_epi8(code_book, _mm256_and_si256(bits, low_nibbles));
      const __m256i high =
          _mm256_shuffle_epi8(code_book, _mm256_and_si256(_mm256_srli_epi16(bits, 4), low_nibbles));
      const __m256i weights[2] = {_mm256_permute2x128_si256(low, high, 0x20),
                                  _mm256_permute2x128_si256(low, high, 0x31)};
      for (int k = 0; k < 2; ++k) {
        const __m256i magnitude = _mm256_sign_epi8(weights[k], weights[k]);
        const __m256i scale = broadcast_i16(scales, 2 * p + k);
        for (int c = 0; c < kCols; ++c) {
          const __m256i q8 = load_256(xb[c] + kQ8KQs + 64 * p + 32 * k);
          const __m256i pairs = _mm256_maddubs_epi16(magnitude, _mm256_sign_epi8(q8, weights[k]));
          sums[c] = _mm256_add_epi32(sums[c], _mm256_madd_epi16(pairs, scale));
        }
      }
    }
    // d in lane 0 (lane 1 is scales_h, unused).
    const __m128 d = load_fp16_pair(w + offsetof(BlockIQ4_XS, d));
    for (int c = 0; c < kCols; ++c) {
      const __m128 scaled = _mm_mul_ps(d, _mm_set1_ps(load_f32(xb[c])));
      acc[c] = _mm256_fmadd_ps(_mm256_broadcastss_ps(scaled), _mm256_cvtepi32_ps(sums[c]), acc[c]);
    }
  }
  for (int c = 0; c < kCols; ++c) out[c] = hsum(acc[c]);
}

}  // namespace

void vec_dot_iq4_xs_avx2(int64_t n, const void* w, const void* x, size_t x_stride, int n_cols,
                         float* out) {
  const auto* weights = static_cast<const uint8_t*>(w);
  const auto* columns = static_cast<const uint8_t*>(x);
  for_each_column_group(n_cols, [&]<int kCols>(int c) {
    dot_iq4_xs<kCols>(n / 256, weights, columns + c * x_stride, x_stride, out + c);
  });
}

}  // namespace strata
