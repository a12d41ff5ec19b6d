// The AVX-512 VNNI dot products of the type-1 super-block formats with 32-weight sub-blocks
// (Q4_K, Q5_K), bit for bit their AVX2 kernels' (q4_k_avx2.cpp, q5_k_avx2.cpp): a CPU runs one
// of the two for decode and prefill alike, and a test holds them to equality. Include only from
// *_avx512.cpp files; everything here has internal linkage.
//
// The AVX2 kernels' integer lanes are exact: lane k of a super-block's sums is
// sum over sub-blocks j of scale_j * (the 4 products 4k..4k+3 of sub-block j), whatever the
// instructions. Here one zmm holds a 64-byte group's two sub-blocks (2g in the low half, 2g + 1
// in the high half, against the group's 64 activations); one vpdpbusd makes their 16 sums of 4
// products, and one vpdpwssd multiplies them by the two scales and adds them up (each sum fits
// the low int16 of its lane, |sum| <= 4 * 31 * 128, and a scale as int32 is the int16 pair
// (scale, 0)): 2 uops per column and group where maddubs, madd and adds take 6. The halves are
// added once per super-block; the float step (accumulate_type1) and the lane sum are the AVX2
// kernels'. What columns share (scales, quants) is decoded once per super-block, so the gain is
// prefill's: 1.2-1.3x on 4 columns, ~1.1x on one (bench/vec_dot_kquant_bench.cpp).
#pragma once

#include <immintrin.h>

#include "cpu/kernels/k_quant_avx2.h"

namespace strata::kquant::avx512 {
namespace {

using namespace kquant::avx2;

// Format supplies Block (d, dmin, scales, qs fields) and a Quants type: constructed from a
// block, quants(g) gives the 64 unsigned quants of group g, sub-block 2g's then 2g + 1's.
template <class Format, int kCols>
void dot_type1(int64_t n_blocks, const uint8_t* w, const uint8_t* x, size_t x_stride, float* out) {
  using Block = typename Format::Block;
  const __m256i lane1 = opaque(_mm256_set1_epi32(1));
  __m512i scale_picks[4];  // the int32 scale of sub-block 2g in the low half, 2g + 1 in the high
  for (int g = 0; g < 4; ++g)
    scale_picks[g] = _mm512_inserti64x4(_mm512_zextsi256_si512(_mm256_set1_epi32(2 * g)),
                                        _mm256_set1_epi32(2 * g + 1), 1);
  __m256 acc[kCols];
  for (int c = 0; c < kCols; ++c) acc[c] = _mm256_setzero_ps();

  for (int64_t b = 0; b < n_blocks; ++b, w += sizeof(Block)) {
    prefetch_ahead<sizeof(Block)>(w);
    const __m256i codes = unpack_k_scales(w + offsetof(Block, scales));
    const __m256i mins = _mm256_shuffle_epi8(codes, zero_extend_mask(kMinPairsMask));
    const __m512i scales =
        _mm512_zextsi256_si512(_mm256_cvtepu8_epi32(_mm256_castsi256_si128(codes)));
    typename Format::Quants quants(w);
    const uint8_t* xb[kCols];
    __m512i sums[kCols];
    for (int c = 0; c < kCols; ++c) {
      xb[c] = x + c * x_stride + b * sizeof(BlockQ8_K);
      sums[c] = _mm512_setzero_si512();
    }
    for (int g = 0; g < 4; ++g) {
      const __m512i q = quants(g);
      const __m512i scale = _mm512_permutexvar_epi32(scale_picks[g], scales);
      for (int c = 0; c < kCols; ++c) {
        const __m512i activations = _mm512_loadu_si512(xb[c] + kQ8KQs + 64 * g);
        const __m512i dots = _mm512_dpbusd_epi32(_mm512_setzero_si512(), q, activations);
        sums[c] = _mm512_dpwssd_epi32(sums[c], dots, scale);
      }
    }
    const __m128 d_dmin = load_fp16_pair(w + offsetof(Block, d));
    for (int c = 0; c < kCols; ++c) {
      const __m256i lanes =
          _mm256_add_epi32(_mm512_castsi512_si256(sums[c]), _mm512_extracti64x4_epi64(sums[c], 1));
      const __m256i min_sums = _mm256_madd_epi16(load_256(xb[c] + kQ8KBsums), mins);
      acc[c] = accumulate_type1(acc[c], d_dmin, load_f32(xb[c]), lanes, min_sums, lane1);
    }
  }
  for (int c = 0; c < kCols; ++c) out[c] = hsum(acc[c]);
}

// The 32 bytes at p in both halves, the high half's shifted right by `shift` bits per 16-bit
// lane: nibbles or bit planes of sub-block 2g in the low half, 2g + 1 in the high half.
[[gnu::always_inline]] inline __m512i both_halves(const uint8_t* p, int shift) {
  const __m512i bytes = _mm512_broadcast_i64x4(load_256(p));
  return _mm512_mask_srli_epi16(bytes, 0xffff0000u, bytes, unsigned(shift));
}

template <class Format>
void vec_dot_type1(int64_t n, const void* w, const void* x, size_t x_stride, int n_cols,
                   float* out) {
  const auto* weights = static_cast<const uint8_t*>(w);
  const auto* columns = static_cast<const uint8_t*>(x);
  for_each_column_group(n_cols, [&]<int kCols>(int c) {
    dot_type1<Format, kCols>(n / 256, weights, columns + c * x_stride, x_stride, out + c);
  });
}

}  // namespace
}  // namespace strata::kquant::avx512
