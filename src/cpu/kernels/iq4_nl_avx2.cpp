// AVX2 dot products of IQ4_NL rows with Q8_0 activations: one byte shuffle looks the 32 indices
// up in the 16-entry code book, then signed bytes meet signed bytes (block32_avx2.h,
// SignedQuants).
#include "cpu/kernels/simd_kernels.h"

#include "cpu/kernels/block32_avx2.h"
#include "quant/iq4_nl.h"
#include "quant/q8_0.h"

#include <cstddef>

namespace strata {
namespace {

namespace avx2 = block32_avx2;

struct Format {
  using Block = BlockIQ4_NL;
  using ActivationBlock = BlockQ8_0;
  static constexpr int kChains = 2;  // compute-bound: hide the FMA latency (block32_avx2.h)

  static avx2::SignedQuants decode(const float* table, const uint8_t* block) {
    const __m128i book = _mm_loadu_si128(reinterpret_cast<const __m128i*>(kIQ4NLValues));
    const __m256i indices = avx2::unpack_nibbles(block + offsetof(Block, qs));
    const __m256i codes = _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(book), indices);
    return avx2::SignedQuants::from(codes, avx2::broadcast_half(table, block + offsetof(Block, d)));
  }
};

}  // namespace

void vec_dot_iq4_nl_avx2(int64_t n, const void* w, const void* x, size_t x_stride, int n_cols,
                         float* out) {
  avx2::vec_dot<Format>(n, w, x, x_stride, n_cols, out);
}

void vec_dot_rows_iq4_nl_avx2(int64_t n, const void* w, size_t w_stride, int n_rows, const void* x,
                              float* out) {
  avx2::vec_dot_rows<Format>(n, w, w_stride, n_rows, x, out);
}

}  // namespace strata
