// Q4_K dot products on AVX-512 VNNI, bit-identical to q4_k_avx2.cpp (k_quant_type1_avx512.h).
#include "cpu/kernels/simd_kernels.h"

#include "cpu/kernels/k_quant_type1_avx512.h"
#include "quant/q4_k.h"

namespace strata {
namespace {

struct Format {
  using Block = BlockQ4_K;
  struct Quants {
    const uint8_t* qs;
    explicit Quants(const uint8_t* block) : qs(block + offsetof(Block, qs)) {}
    // Group g's 32 bytes: low nibbles (sub-block 2g), high nibbles (2g + 1).
    __m512i operator()(int g) const {
      return _mm512_and_si512(kquant::avx512::both_halves(qs + 32 * g, 4), _mm512_set1_epi8(0x0f));
    }
  };
};

}  // namespace

void vec_dot_q4_k_avx512(int64_t n, const void* w, const void* x, size_t x_stride, int n_cols,
                         float* out) {
  kquant::avx512::vec_dot_type1<Format>(n, w, x, x_stride, n_cols, out);
}

}  // namespace strata
