// Decode's Q8_0 rows kernel on AVX-512 with VNNI, bit-identical to the AVX2 one (q8_0_avx2.cpp).
//
// The AVX2 kernel sums a row's blocks in one chain (llama.cpp's order), so blocks cannot share
// a register the way Q4_0's pairs do (block32_avx512.h). Rows can: one zmm holds block b of
// row r in its low half and of row r + 1 in its high half, and each half runs the AVX2 chain:
//  * vpdpbusd's int32 lanes equal maddubs + madd's (sums of 4 neighbouring products, exact):
//    the signed weights enter as w + 128 (their sign bit flipped) and 128 times each lane's
//    activation sum, prepared once per call, starts the accumulator negative;
//  * per block, scale = d_w * d_x and acc = scale * float(lanes) + acc, as there;
//  * each half ends in the AVX2 kernel's horizontal sum.
// A row pair and block cost ~7 uops on ports 0 and 5 where the AVX2 kernel spends ~7 on ports
// 0, 1 and 5 for each row.
#include "cpu/kernels/simd_kernels.h"

#include "base/fp16.h"
#include "cpu/kernels/halves_avx512.h"
#include "cpu/kernels/horizontal_sum_avx2.h"
#include "cpu/kernels/row_prefetch.h"
#include "quant/q8_0.h"

#include <immintrin.h>

#include <cstddef>
#include <cstring>
#include <vector>

namespace strata {
namespace {

// An activation block in the kernel's layout, both halves alike.
struct alignas(64) ColumnBlock {
  __m512i quants;   // the block's 32 int8 quants, twice
  __m512i offsets;  // int32 lanes: -128 * (the sum of each lane's 4 quants), twice
  float d;
};
using Column = std::vector<ColumnBlock>;

// Blocks are read through byte pointers: rows and activations may start at any byte, where a
// BlockQ8_0 (2-byte aligned) cannot be.
const uint8_t* block_at(const uint8_t* blocks, int64_t b) {
  return blocks + b * int64_t(sizeof(BlockQ8_0));
}

__m256i quants_of(const uint8_t* block) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + offsetof(BlockQ8_0, qs)));
}

fp16_t scale_of(const uint8_t* block) {
  fp16_t d;
  std::memcpy(&d, block + offsetof(BlockQ8_0, d), sizeof d);
  return d;
}

const Column& prepare_column(const float* table, const uint8_t* x, int64_t n_blocks) {
  thread_local Column column;
  column.resize(size_t(n_blocks));
  for (int64_t b = 0; b < n_blocks; ++b) {
    const __m256i quants = quants_of(block_at(x, b));
    ColumnBlock& block = column[size_t(b)];
    block.quants = _mm512_inserti64x4(_mm512_zextsi256_si512(quants), quants, 1);
    block.offsets = _mm512_sub_epi32(
        _mm512_setzero_si512(),
        _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(char(128)), block.quants));
    block.d = table[scale_of(block_at(x, b))];
  }
  return column;
}

// Rows r and r + 1 (r + 1 absent when kPair is false: its half is computed on row r and
// dropped).
template <bool kPair>
void dot_row_pair(const float* table, int64_t n_blocks, const uint8_t* w, size_t w_stride,
                  const ColumnBlock* column, float* out) {
  const uint8_t* second_row = kPair ? w + w_stride : w;
  const __m512i sign_bits = _mm512_set1_epi8(char(0x80));
  __m512 acc = _mm512_setzero_ps();
  for (int64_t b = 0; b < n_blocks; ++b) {
    const ColumnBlock& x = column[b];
    const uint8_t* first = block_at(w, b);
    const uint8_t* second = block_at(second_row, b);
    prefetch_past_row_group(w, 2 * w_stride, 2 * b * int64_t(sizeof(BlockQ8_0)));
    const __m512i quants =
        _mm512_inserti64x4(_mm512_zextsi256_si512(quants_of(first)), quants_of(second), 1);
    const __m512i lanes =
        _mm512_dpbusd_epi32(x.offsets, _mm512_xor_si512(quants, sign_bits), x.quants);
    const __m512 scale = _mm512_mul_ps(two_halves(_mm256_broadcast_ss(table + scale_of(first)),
                                                  _mm256_broadcast_ss(table + scale_of(second))),
                                       _mm512_set1_ps(x.d));
    acc = _mm512_fmadd_ps(scale, _mm512_cvtepi32_ps(lanes), acc);
  }
  out[0] = horizontal_sum(_mm512_castps512_ps256(acc));
  if constexpr (kPair) out[1] = horizontal_sum(high_half(acc));
}

}  // namespace

void vec_dot_rows_q8_0_avx512(int64_t n, const void* w, size_t w_stride, int n_rows, const void* x,
                              float* out) {
  const int64_t n_blocks = n / 32;
  const float* table = fp16_to_fp32_table();
  const ColumnBlock* column =
      prepare_column(table, static_cast<const uint8_t*>(x), n_blocks).data();
  const auto* weights = static_cast<const uint8_t*>(w);
  int r = 0;
  for (; r + 2 <= n_rows; r += 2)
    dot_row_pair<true>(table, n_blocks, weights + size_t(r) * w_stride, w_stride, column, out + r);
  if (r < n_rows)
    dot_row_pair<false>(table, n_blocks, weights + size_t(r) * w_stride, w_stride, column, out + r);
}

}  // namespace strata
