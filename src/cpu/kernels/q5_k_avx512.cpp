// Q5_K dot products on AVX-512 VNNI, bit-identical to q5_k_avx2.cpp (k_quant_type1_avx512.h):
// Q4_K's nibbles with the fifth bit of each quant from qh (bit j of qh[l] for weight 32j + l).
#include "cpu/kernels/simd_kernels.h"

#include "cpu/kernels/k_quant_type1_avx512.h"
#include "quant/q5_k.h"

namespace strata {
namespace {

struct Format {
  using Block = BlockQ5_K;
  struct Quants {
    const uint8_t* qs;
    const uint8_t* qh;
    explicit Quants(const uint8_t* block)
        : qs(block + offsetof(Block, qs)), qh(block + offsetof(Block, qh)) {}
    // Group g: nibbles as Q4_K's, OR bit 2g (low half) or 2g + 1 (high half) of qh moved to bit 4.
    __m512i operator()(int g) const {
      using kquant::avx512::both_halves;
      const __m512i nibbles = _mm512_and_si512(both_halves(qs + 32 * g, 4), _mm512_set1_epi8(0x0f));
      // Bit 2g of each qh byte to bit 4: shift left by 4 - 2g (right when negative); the high
      // half's bit 2g + 1 is one further, shifted right by one more.
      const __m512i planes = both_halves(qh, 1);
      const int left = 4 - 2 * g;
      const __m512i moved = left >= 0 ? _mm512_slli_epi16(planes, unsigned(left))
                                      : _mm512_srli_epi16(planes, unsigned(-left));
      return _mm512_or_si512(nibbles, _mm512_and_si512(moved, _mm512_set1_epi8(0x10)));
    }
  };
};

}  // namespace

void vec_dot_q5_k_avx512(int64_t n, const void* w, const void* x, size_t x_stride, int n_cols,
                         float* out) {
  kquant::avx512::vec_dot_type1<Format>(n, w, x, x_stride, n_cols, out);
}

}  // namespace strata
