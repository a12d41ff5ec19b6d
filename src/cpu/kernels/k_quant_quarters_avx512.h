// The AVX-512 VNNI dot products of the super-block formats whose 32-weight quarters span two
// 16-weight sub-blocks (Q2_K, Q6_K), bit for bit their AVX2 kernels' (q2_k_avx2.cpp,
// q6_k_avx2.cpp). Include only from *_avx512.cpp files; everything here has internal linkage.
//
// The AVX2 kernels' integer lanes are exact: lane l of a super-block's sums is, over the eight
// quarters, scale * (4 products) of the sub-block that lane's bytes fall in. Here one zmm holds
// two quarters (64 quants against 64 consecutive activations, four sub-blocks in its four
// 128-bit lanes); one vpdpbusd makes 16 sums of 4 products and one vpdpwssd multiplies them by
// the four scales and adds them up (a sum fits the low int16 of its lane, |sum| <= 4 * 63 * 128,
// and each scale is given as the int16 pair (scale, 0)): 2 uops per column and pair of quarters
// where the AVX2 kernels spend 6. The register's halves are added once per super-block; the
// float step and the lane sum are the AVX2 kernels'.
#pragma once

#include <immintrin.h>

#include "cpu/kernels/k_quant_avx2.h"

namespace strata::kquant::avx512 {
namespace {

using namespace kquant::avx2;

// Format supplies Block and a Decoded type made from a block: scale_pairs (the 16 sub-block
// scales as int16 pairs (scale, 0) in int32 lanes), half(h) whose pair(p) gives quarters 2p and
// 2p + 1 of half h, and accumulate(acc, column, lanes), the AVX2 kernel's float step.
template <class Format, int kCols>
void dot_quarter_pairs(int64_t n_blocks, const uint8_t* w, const uint8_t* x, size_t x_stride,
                       float* out) {
  using Block = typename Format::Block;
  // Sub-blocks 4m .. 4m + 3, one per 128-bit lane, for the pair of quarters m = 2h + p.
  __m512i scale_picks[4];
  for (int m = 0; m < 4; ++m)
    scale_picks[m] = _mm512_setr_epi32(4 * m, 4 * m, 4 * m, 4 * m, 4 * m + 1, 4 * m + 1, 4 * m + 1,
                                       4 * m + 1, 4 * m + 2, 4 * m + 2, 4 * m + 2, 4 * m + 2,
                                       4 * m + 3, 4 * m + 3, 4 * m + 3, 4 * m + 3);
  __m256 acc[kCols];
  for (int c = 0; c < kCols; ++c) acc[c] = _mm256_setzero_ps();

  for (int64_t b = 0; b < n_blocks; ++b, w += sizeof(Block)) {
    prefetch_ahead<sizeof(Block)>(w);
    const typename Format::Decoded block(w);
    const uint8_t* xb[kCols];
    __m512i sums[kCols];
    for (int c = 0; c < kCols; ++c) {
      xb[c] = x + c * x_stride + b * sizeof(BlockQ8_K);
      sums[c] = _mm512_setzero_si512();
    }
    for (int h = 0; h < 2; ++h) {
      const auto half = block.half(h);
      for (int p = 0; p < 2; ++p) {
        const __m512i quants = half.pair(p);
        const __m512i scale = _mm512_permutexvar_epi32(scale_picks[2 * h + p], block.scale_pairs);
        for (int c = 0; c < kCols; ++c) {
          const __m512i activations = _mm512_loadu_si512(xb[c] + kQ8KQs + 128 * h + 64 * p);
          const __m512i dots = _mm512_dpbusd_epi32(_mm512_setzero_si512(), quants, activations);
          sums[c] = _mm512_dpwssd_epi32(sums[c], dots, scale);
        }
      }
    }
    for (int c = 0; c < kCols; ++c) {
      const __m256i lanes =
          _mm256_add_epi32(_mm512_castsi512_si256(sums[c]), _mm512_extracti64x4_epi64(sums[c], 1));
      acc[c] = block.accumulate(acc[c], xb[c], lanes);
    }
  }
  for (int c = 0; c < kCols; ++c) out[c] = hsum(acc[c]);
}

template <class Format>
void vec_dot_quarter_pairs(int64_t n, const void* w, const void* x, size_t x_stride, int n_cols,
                           float* out) {
  const auto* weights = static_cast<const uint8_t*>(w);
  const auto* columns = static_cast<const uint8_t*>(x);
  for_each_column_group(n_cols, [&]<int kCols>(int c) {
    dot_quarter_pairs<Format, kCols>(n / 256, weights, columns + c * x_stride, x_stride, out + c);
  });
}

}  // namespace
}  // namespace strata::kquant::avx512
