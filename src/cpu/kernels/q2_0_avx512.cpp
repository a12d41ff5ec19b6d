// Decode's Q2_0 rows kernel on AVX-512 with VNNI. A Q2_0 block is one pair of Q8_0 activation
// blocks, the unit of block32_avx512.h's paired column, so one zmm of codes meets one ColumnPair;
// it gives the AVX2 kernel's bits (q2_0_avx2.cpp: half 0 in the even chain, half 1 in the odd)
// by block32_avx512.h's construction. Codes of activations 16-31 of each half stay in bits 2-3
// (kHighLaneScale 4), so a block decodes in one broadcast, one shift and one mask.
#include "cpu/kernels/simd_kernels.h"

#include "cpu/kernels/block32_avx512.h"
#include "quant/q2_0.h"

#include <cstddef>
#include <cstring>

namespace strata {
namespace {

constexpr int kOffset = 1;
constexpr int kHighLaneScale = 4;
constexpr int64_t kBlockBytes = sizeof(BlockQ2_0);

// [codes 0-15 | codes 16-31, x4 | codes 32-47 | codes 48-63, x4], one per byte.
__m512i codes_of_block(const uint8_t* block) {
  const __m512i all = _mm512_broadcast_i32x4(
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + offsetof(BlockQ2_0, qs))));
  const __m512i shifted =
      _mm512_srlv_epi32(all, _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 4, 4, 4, 4, 4, 4, 4, 4));
  const __m128i low = _mm_set1_epi8(0x03), high = _mm_set1_epi8(0x0c);
  const __m256i half = _mm256_inserti128_si256(_mm256_castsi128_si256(low), high, 1);
  return _mm512_and_si512(shifted, _mm512_inserti64x4(_mm512_castsi256_si512(half), half, 1));
}

template <int kRows>
void dot_rows(const float* table, int64_t n_blocks, const uint8_t* w, size_t w_stride,
              const block32_avx512::ColumnPair* column, float* out) {
  __m512 acc[kRows];
  for (auto& a : acc) a = _mm512_setzero_ps();
  for (int64_t b = 0; b < n_blocks; ++b) {
    const block32_avx512::ColumnPair& x = column[b];
    for (int r = 0; r < kRows; ++r) {
      prefetch_past_row_group(w, kRows * w_stride, (b * kRows + r) * kBlockBytes);
      const uint8_t* block = w + size_t(r) * w_stride + b * kBlockBytes;
      const __m512i lanes = _mm512_dpbusd_epi32(x.offsets, codes_of_block(block), x.quants);
      uint16_t d;
      std::memcpy(&d, block + offsetof(BlockQ2_0, d), 2);
      const __m512 scale = _mm512_mul_ps(_mm512_set1_ps(table[d]), x.scales);
      acc[r] = _mm512_fmadd_ps(scale, _mm512_cvtepi32_ps(lanes), acc[r]);
    }
  }
  for (int r = 0; r < kRows; ++r)
    out[r] = horizontal_sum(_mm256_add_ps(_mm512_castps512_ps256(acc[r]), high_half(acc[r])));
}

}  // namespace

void vec_dot_rows_q2_0_avx512(int64_t n, const void* w, size_t w_stride, int n_rows, const void* x,
                              float* out) {
  const int64_t n_blocks = n / kQ2_0BlockSize;
  const float* table = fp16_to_fp32_table();
  // 2 * n_blocks activation blocks, an even count: every pair is full.
  const block32_avx512::ColumnPair* column =
      block32_avx512::pair_up<kOffset, kHighLaneScale>(table, static_cast<const uint8_t*>(x),
                                                       2 * n_blocks)
          .data();
  const auto* weights = static_cast<const uint8_t*>(w);
  in_groups_of_four(n_rows, [&](auto size, int first) {
    dot_rows<size()>(table, n_blocks, weights + size_t(first) * w_stride, w_stride, column,
                     out + first);
  });
}

}  // namespace strata
