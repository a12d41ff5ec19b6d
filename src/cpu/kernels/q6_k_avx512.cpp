// Q6_K dot products on AVX-512 VNNI, bit-identical to q6_k_avx2.cpp (k_quant_quarters_avx512.h).
// ql holds a half's low 4 bits (quarters 0 and 1 in the low nibbles of its two 32-byte rows,
// 2 and 3 in the high nibbles), qh bits 4-5 (quarter k in bits 2k, 2k + 1).
#include "cpu/kernels/simd_kernels.h"

#include "cpu/kernels/k_quant_quarters_avx512.h"
#include "quant/q6_k.h"

namespace strata {
namespace {

using namespace kquant::avx2;

struct Format {
  using Block = BlockQ6_K;

  struct Half {
    __m512i pairs[2];
    __m512i pair(int p) const { return pairs[p]; }
  };

  struct Decoded {
    const uint8_t* block;
    __m512i scale_pairs;
    __m256i all_scales;  // the 16 scales as i16, for the offset
    float d;

    explicit Decoded(const uint8_t* w) : block(w) {
      const __m128i scales = load_128(w + offsetof(Block, scales));
      all_scales = _mm256_cvtepi8_epi16(scales);
      scale_pairs = _mm512_cvtepu16_epi32(all_scales);
      d = load_fp16(w + offsetof(Block, d));
    }
    Half half(int h) const {
      const __m512i low_nibbles = _mm512_set1_epi8(0x0f), bits45 = _mm512_set1_epi8(0x30);
      const __m512i low = _mm512_loadu_si512(block + offsetof(Block, ql) + 64 * h);
      const __m512i high = _mm512_broadcast_i64x4(load_256(block + offsetof(Block, qh) + 32 * h));
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
    __m256 accumulate(__m256 acc, const uint8_t* column, __m256i lanes) const {
      return accumulate_q6_k(acc, d, column, lanes, all_scales);
    }
  };
};

}  // namespace

void vec_dot_q6_k_avx512(int64_t n, const void* w, const void* x, size_t x_stride, int n_cols,
                         float* out) {
  kquant::avx512::vec_dot_quarter_pairs<Format>(n, w, x, x_stride, n_cols, out);
}

}  // namespace strata
