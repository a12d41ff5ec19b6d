// Decode's Q4_0 rows kernel on AVX-512 with VNNI (block32_avx512.h says why and how it stays
// bit-identical to the AVX2 one).
#include "cpu/kernels/simd_kernels.h"

#include "cpu/kernels/block32_avx512.h"
#include "quant/q4_0.h"

#include <cstddef>

namespace strata {
namespace {

struct Format {
  using Block = BlockQ4_0;
  static constexpr int kOffset = 8;
  static constexpr int kHighLaneScale = 16;

  // [low nibbles of b | high nibbles of b, x16 | low of b + 1 | high of b + 1, x16]: each
  // block's 16 bytes broadcast to two 128-bit lanes by the loads themselves, then one mask keeps
  // the low nibbles in the lower copy and the high ones, in place, in the upper.
  static __m512i quants_of_pair(const uint8_t* pair) {
    const __m256i first = _mm256_broadcastsi128_si256(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(pair + offsetof(Block, qs))));
    const __m256i second = _mm256_broadcastsi128_si256(_mm_loadu_si128(
        reinterpret_cast<const __m128i*>(pair + sizeof(Block) + offsetof(Block, qs))));
    const __m512i both = _mm512_inserti64x4(_mm512_zextsi256_si512(first), second, 1);
    return _mm512_and_si512(both, nibble_masks());
  }

  static __m256i quants_of_block(const uint8_t* block) {
    const __m256i both = _mm256_broadcastsi128_si256(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + offsetof(Block, qs))));
    return _mm256_and_si256(both, _mm512_castsi512_si256(nibble_masks()));
  }

  static __m512i nibble_masks() {
    const __m128i low = _mm_set1_epi8(0x0f), high = _mm_set1_epi8(char(0xf0));
    const __m256i block = _mm256_inserti128_si256(_mm256_castsi128_si256(low), high, 1);
    return _mm512_inserti64x4(_mm512_castsi256_si512(block), block, 1);
  }
};

}  // namespace

void vec_dot_rows_q4_0_avx512(int64_t n, const void* w, size_t w_stride, int n_rows, const void* x,
                              float* out) {
  block32_avx512::vec_dot_rows<Format>(n, w, w_stride, n_rows, x, out);
}

}  // namespace strata
