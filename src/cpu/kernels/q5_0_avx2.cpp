// AVX2 dot products of Q5_0 rows with Q8_0 activations: the 5-bit quants (nibble | 0x10 where
// qh has the bit) are taken unsigned and 16 * x is subtracted (block32_avx2.h, OffsetQuants).
#include "cpu/kernels/simd_kernels.h"

#include "cpu/kernels/block32_avx2.h"
#include "quant/q5_0.h"
#include "quant/q8_0.h"

#include <cstddef>

namespace strata {
namespace {

namespace avx2 = block32_avx2;

struct Format {
  using Block = BlockQ5_0;
  using ActivationBlock = BlockQ8_0;
  static constexpr int kChains = 2;  // compute-bound: hide the FMA latency (block32_avx2.h)

  static avx2::OffsetQuants<16> decode(const float* table, const uint8_t* block) {
    const __m256i nibbles = avx2::unpack_nibbles(block + offsetof(Block, qs));
    const __m256i fifth_bits =
        _mm256_and_si256(avx2::expand_bits(block + offsetof(Block, qh)), _mm256_set1_epi8(0x10));
    return {_mm256_or_si256(nibbles, fifth_bits),
            avx2::broadcast_half(table, block + offsetof(Block, d))};
  }
};

}  // namespace

void vec_dot_q5_0_avx2(int64_t n, const void* w, const void* x, size_t x_stride, int n_cols,
                       float* out) {
  avx2::vec_dot<Format>(n, w, x, x_stride, n_cols, out);
}

void vec_dot_rows_q5_0_avx2(int64_t n, const void* w, size_t w_stride, int n_rows, const void* x,
                            float* out) {
  avx2::vec_dot_rows<Format>(n, w, w_stride, n_rows, x, out);
}

}  // namespace strata
