// Q2_K dot products on AVX-512 VNNI, bit-identical to q2_k_avx2.cpp (k_quant_quarters_avx512.h):
// quarters 2p and 2p + 1 of a half are bit pairs 4p and 4p + 2 of its 32 bytes.
#include "cpu/kernels/simd_kernels.h"

#include "cpu/kernels/k_quant_quarters_avx512.h"
#include "quant/q2_k.h"

namespace strata {
namespace {

using namespace kquant::avx2;

struct Format {
  using Block = BlockQ2_K;

  struct Half {
    __m512i bits;  // the half's 32 bytes, twice
    __m512i pair(int p) const {
      const __m512i shifts = _mm512_inserti64x4(_mm512_set1_epi16(int16_t(4 * p)),
                                                _mm256_set1_epi16(int16_t(4 * p + 2)), 1);
      return _mm512_and_si512(_mm512_srlv_epi16(bits, shifts), _mm512_set1_epi8(3));
    }
  };

  struct Decoded {
    const uint8_t* block;
    __m256i mins;  // minimum codes as i16, one per bsum
    __m512i scale_pairs;
    __m128 d_dmin;

    explicit Decoded(const uint8_t* w) : block(w) {
      // Scale codes (low nibbles) and minimum codes (high nibbles).
      const __m128i codes = load_128(w + offsetof(Block, scales));
      const __m128i low_nibbles = _mm_set1_epi8(0x0f);
      mins = _mm256_shuffle_epi8(
          _mm256_broadcastsi128_si256(_mm_and_si128(_mm_srli_epi16(codes, 4), low_nibbles)),
          zero_extend_mask(kAllMask));
      scale_pairs = _mm512_cvtepu8_epi32(_mm_and_si128(codes, low_nibbles));
      d_dmin = load_fp16_pair(w + offsetof(Block, d));
    }
    Half half(int h) const {
      return {_mm512_broadcast_i64x4(load_256(block + offsetof(Block, qs) + 32 * h))};
    }
    __m256 accumulate(__m256 acc, const uint8_t* column, __m256i lanes) const {
      const __m256i min_sums = _mm256_madd_epi16(load_256(column + kQ8KBsums), mins);
      return accumulate_type1(acc, d_dmin, load_f32(column), lanes, min_sums, _mm256_set1_epi32(1));
    }
  };
};

}  // namespace

void vec_dot_q2_k_avx512(int64_t n, const void* w, const void* x, size_t x_stride, int n_cols,
                         float* out) {
  kquant::avx512::vec_dot_quarter_pairs<Format>(n, w, x, x_stride, n_cols, out);
}

}  // namespace strata
