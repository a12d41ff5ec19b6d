// Decode's rows kernel (VecDotRowsFn) for the 32-weight block formats with an offset (Q4_0:
// nibble - 8) on AVX-512 with VNNI. Include only from *_avx512.cpp files (compiled with
// -mavx512f -mavx512bw -mavx512vl -mavx512vnni); everything here has internal linkage, so no
// AVX-512 copy of an inline function can stand in for another file's.
//
// Bit-identical to the AVX2 kernel (block32_avx2.h, Format::kChains == 2), by construction:
//  * one zmm holds a pair of blocks, b in the low half and b + 1 in the high half, and one
//    accumulator per row collects them: the AVX2 kernel's two chains (even blocks, odd blocks)
//    side by side, summed at the end as even + odd in the same horizontal order;
//  * vpdpbusd's int32 lanes equal maddubs + madd's (each the sum of 4 neighbouring products,
//    exact: no 16-bit pair of these formats can saturate), and the offset's share is subtracted
//    as the same integer;
//  * per block, scale = d_w * d_x and acc = scale * float(lanes) + acc, as there.
// So decode and prefill (which runs the AVX2 columns kernel) keep computing the same numbers.
//
// Why: decode streams weights, and the AVX2 kernel does not keep up with memory on xeon-2's
// Xeon (10-13 GB/s a core on data in L2, about one core's share of DRAM; docs/speed.md). Here a
// pair of blocks costs each row ~7 uops on ports 0 and 5 instead of ~16 on ports 0, 1 and 5:
// 1.45x on data in L2 (1.59x with the high nibbles masked in place), 1.1-1.2x from DRAM on 2
// threads (bench/rows_kernel_ab_bench.cpp).
// The activation column, shared by every row of a call, is rearranged once per call into pairs
// (PairedColumn), so a row's inner loop only loads its own weights.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "base/fp16.h"
#include "cpu/kernels/groups_of_four.h"
#include "cpu/kernels/halves_avx512.h"
#include "cpu/kernels/horizontal_sum_avx2.h"
#include "cpu/kernels/row_prefetch.h"
#include "quant/q8_0.h"

namespace strata::block32_avx512 {
namespace {

// The activation column in the kernel's layout: one entry per pair of blocks (an odd last block
// pairs with zeros).
struct alignas(64) ColumnPair {
  __m512i quants;   // the 64 int8 quants of blocks 2p and 2p + 1
  __m512i offsets;  // int32 lanes: -kOffset * (the sum of each lane's 4 quants)
  __m512 scales;    // d of block 2p in the low 8 floats, of 2p + 1 in the high 8
};
using PairedColumn = std::vector<ColumnPair>;

// Lanes 4-7 of each block (its activations 16-31) hold quants scaled by Format::kHighLaneScale,
// a power of two (Q4_0's high nibbles masked in place, not shifted down: one uop less per pair).
// Their offsets are scaled by it and their activation scales divided by it, so every product
// scale * float(lane) is the same real number as unscaled, and the sums stay bit-identical.
inline __m512 per_lane_scale(int high_lane_scale) {
  const float low = 1.0f, high = 1.0f / float(high_lane_scale);
  return _mm512_setr_ps(low, low, low, low, high, high, high, high, low, low, low, low, high, high,
                        high, high);
}

template <int kOffset, int kHighLaneScale>
const PairedColumn& pair_up(const float* table, const uint8_t* x, int64_t n_blocks) {
  const __m512i offset_scale =
      _mm512_setr_epi32(1, 1, 1, 1, kHighLaneScale, kHighLaneScale, kHighLaneScale, kHighLaneScale,
                        1, 1, 1, 1, kHighLaneScale, kHighLaneScale, kHighLaneScale, kHighLaneScale);
  const __m512 lane_scale = per_lane_scale(kHighLaneScale);
  thread_local PairedColumn column;
  column.resize(size_t((n_blocks + 1) / 2));
  // Through byte pointers: activations may start at any byte, where a BlockQ8_0 cannot.
  constexpr size_t kActivationBytes = sizeof(BlockQ8_0);
  const auto quants_at = [](const uint8_t* block) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + offsetof(BlockQ8_0, qs)));
  };
  const auto scale_at = [table](const uint8_t* block) {
    uint16_t d;
    std::memcpy(&d, block + offsetof(BlockQ8_0, d), 2);
    return table[d];
  };
  for (size_t p = 0; p < column.size(); ++p) {
    const uint8_t* first = x + 2 * p * kActivationBytes;
    const uint8_t* second = first + kActivationBytes;
    const bool has_second = int64_t(2 * p + 1) < n_blocks;
    const __m256i low = quants_at(first);
    const __m256i high = has_second ? quants_at(second) : _mm256_setzero_si256();
    ColumnPair& pair = column[p];
    pair.quants = _mm512_inserti64x4(_mm512_zextsi256_si512(low), high, 1);
    pair.offsets = _mm512_mullo_epi32(
        _mm512_sub_epi32(
            _mm512_setzero_si512(),
            _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(kOffset), pair.quants)),
        offset_scale);
    pair.scales = _mm512_mul_ps(two_halves(_mm256_set1_ps(scale_at(first)),
                                           _mm256_set1_ps(has_second ? scale_at(second) : 0.0f)),
                                lane_scale);
  }
  return column;
}

// kRows rows against the paired column. Format supplies Block (fp16 d first), kOffset,
// kHighLaneScale and quants_of_pair(block) -> the 64 unsigned quants of that block and the
// next, in activation order, those of lanes 4-7 of each block times kHighLaneScale, and
// quants_of_block(block) -> one block's 32 alike.
template <class Format, int kRows>
void dot_rows(const float* table, int64_t n_blocks, const uint8_t* w, size_t w_stride,
              const ColumnPair* column, float* out) {
  constexpr int64_t kBlockBytes = sizeof(typename Format::Block);
  __m512 acc[kRows];
  for (auto& a : acc) a = _mm512_setzero_ps();
  const int64_t n_full_pairs = n_blocks / 2;
  for (int64_t p = 0; p < n_full_pairs; ++p) {
    const ColumnPair& x = column[p];
    for (int r = 0; r < kRows; ++r) {
      prefetch_past_row_group(w, kRows * w_stride, (p * kRows + r) * 2 * kBlockBytes);
      const uint8_t* pair = w + size_t(r) * w_stride + 2 * p * kBlockBytes;
      const __m512i lanes = _mm512_dpbusd_epi32(x.offsets, Format::quants_of_pair(pair), x.quants);
      uint16_t d_first, d_second;
      std::memcpy(&d_first, pair, 2);
      std::memcpy(&d_second, pair + kBlockBytes, 2);
      const __m512 scale = _mm512_mul_ps(
          two_halves(_mm256_broadcast_ss(table + d_first), _mm256_broadcast_ss(table + d_second)),
          x.scales);
      acc[r] = _mm512_fmadd_ps(scale, _mm512_cvtepi32_ps(lanes), acc[r]);
    }
  }
  for (int r = 0; r < kRows; ++r) {
    __m256 even = _mm512_castps512_ps256(acc[r]);
    const __m256 odd = high_half(acc[r]);
    if (n_blocks % 2 != 0) {  // the last block joins the even chain, as in the AVX2 kernel
      const ColumnPair& x = column[n_full_pairs];
      const uint8_t* block = w + size_t(r) * w_stride + 2 * n_full_pairs * kBlockBytes;
      const __m256i lanes =
          _mm256_dpbusd_epi32(_mm512_castsi512_si256(x.offsets), Format::quants_of_block(block),
                              _mm512_castsi512_si256(x.quants));
      uint16_t d;
      std::memcpy(&d, block, 2);
      const __m256 scale =
          _mm256_mul_ps(_mm256_broadcast_ss(table + d), _mm512_castps512_ps256(x.scales));
      even = _mm256_fmadd_ps(scale, _mm256_cvtepi32_ps(lanes), even);
    }
    out[r] = horizontal_sum(_mm256_add_ps(even, odd));
  }
}

// The VecDotRowsFn of a format: the column paired once, then rows in groups of four.
template <class Format>
void vec_dot_rows(int64_t n, const void* w, size_t w_stride, int n_rows, const void* x,
                  float* out) {
  const int64_t n_blocks = n / 32;
  // A plain pointer: through the thread_local itself, every use is a __tls_get_addr call.
  const float* table = fp16_to_fp32_table();
  const ColumnPair* column = pair_up<Format::kOffset, Format::kHighLaneScale>(
                                 table, static_cast<const uint8_t*>(x), n_blocks)
                                 .data();
  const auto* weights = static_cast<const uint8_t*>(w);
  in_groups_of_four(n_rows, [&](auto size, int first) {
    dot_rows<Format, size()>(table, n_blocks, weights + size_t(first) * w_stride, w_stride, column,
                             out + first);
  });
}

}  // namespace
}  // namespace strata::block32_avx512
