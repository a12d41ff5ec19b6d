// Decode's Q4_0 rows kernel on AVX-512 with VNNI (block32_avx512.h says why and how it stays
// bit-identical to the AVX2 one).
#include "quant/q4_0.h"

#include "quant/block32_avx512.h"

#include <cstddef>

namespace strata {
namespace {

struct Format {
  using Block = BlockQ4_0;
  static constexpr int kOffset = 8;

  // [low nibbles of b | high nibbles of b | low of b + 1 | high of b + 1]: each block's 16
  // bytes broadcast to two 128-bit lanes by the loads themselves, the upper copy shifted by 4.
  static __m512i quants_of_pair(const uint8_t* pair) {
    const __m256i first = _mm256_broadcastsi128_si256(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(pair + offsetof(Block, qs))));
    const __m256i second = _mm256_broadcastsi128_si256(_mm_loadu_si128(
        reinterpret_cast<const __m128i*>(pair + sizeof(Block) + offsetof(Block, qs))));
    const __m512i both = _mm512_inserti64x4(_mm512_zextsi256_si512(first), second, 1);
    const __m512i shifted =
        _mm512_srlv_epi32(both, _mm512_set_epi32(4, 4, 4, 4, 0, 0, 0, 0, 4, 4, 4, 4, 0, 0, 0, 0));
    return _mm512_and_si512(shifted, _mm512_set1_epi8(0x0f));
  }

  static __m256i quants_of_block(const uint8_t* block) {
    const __m256i both = _mm256_broadcastsi128_si256(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + offsetof(Block, qs))));
    const __m256i shifted = _mm256_srlv_epi32(both, _mm256_set_epi32(4, 4, 4, 4, 0, 0, 0, 0));
    return _mm256_and_si256(shifted, _mm256_set1_epi8(0x0f));
  }
};

}  // namespace

void vec_dot_rows_q4_0_avx512(int64_t n, const void* w, size_t w_stride, int n_rows,
                              const void* x, float* out) {
  block32_avx512::vec_dot_rows<Format>(n, w, w_stride, n_rows, x, out);
}

}  // namespace strata
