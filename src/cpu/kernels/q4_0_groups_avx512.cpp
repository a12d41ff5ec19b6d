// The grouped Q4_0 kernel (q4_0_groups.h) on AVX-512 with VNNI. Per block of 8 rows: two loads
// hold the quants of rows 0-3 and 4-7, four vpdpbusd dot them with the column's activations
// (exact int32 sums of 4 products per lane, the -8 offset's share preloaded as the same
// integer), and per 4 rows one conversion and one FMA add scale * sums into 4 partial sums per
// row. A row's result is (p0 + p1) + (p2 + p3).
//
// Columns share the decoded quants and the permuted weight scales; everything a column adds is
// the same operations in the same order whether a call has 1 column or 4, so decode and
// prefill agree to the bit.
#include "cpu/kernels/q4_0_groups.h"

#include <immintrin.h>

#include <cstddef>
#include <cstring>
#include <vector>

#include "base/check.h"
#include "base/fp16.h"
#include "cpu/kernels/groups_of_four.h"
#include "quant/q4_0.h"
#include "quant/q8_0.h"

namespace strata {
namespace {

// An activation block's share of the kernel that does not depend on the weights, prepared once
// per call and column.
struct alignas(32) PreparedBlock {
  int32_t offsets[4];  // lane k: -8 * (activations 4k..4k+3 + activations 16+4k..16+4k+3)
  float d;
};

// `x` through a byte pointer: activations may start at any byte, where a BlockQ8_0 cannot.
void prepare_column(const float* table, const uint8_t* x, int64_t n_blocks, PreparedBlock* out) {
  const __m128i eights = _mm_set1_epi8(8);
  for (int64_t b = 0; b < n_blocks; ++b) {
    const uint8_t* block = x + b * int64_t(sizeof(BlockQ8_0));
    const uint8_t* quants = block + offsetof(BlockQ8_0, qs);
    const __m128i low = _mm_loadu_si128(reinterpret_cast<const __m128i*>(quants));
    const __m128i high = _mm_loadu_si128(reinterpret_cast<const __m128i*>(quants + 16));
    const __m128i sums =
        _mm_dpbusd_epi32(_mm_dpbusd_epi32(_mm_setzero_si128(), eights, low), eights, high);
    _mm_store_si128(reinterpret_cast<__m128i*>(out[b].offsets),
                    _mm_sub_epi32(_mm_setzero_si128(), sums));
    uint16_t d;
    std::memcpy(&d, block + offsetof(BlockQ8_0, d), 2);
    out[b].d = table[d];
  }
}

// Lane 4r + k of `acc` is partial sum k of row r (r < 4); returns, for rows 0-3 of `first`
// then rows 0-3 of `second`, (p0 + p1) + (p2 + p3).
inline __m256 row_sums(__m512 first, __m512 second) {
  auto fold = [](__m512 acc) {
    const __m512 pairs = _mm512_add_ps(acc, _mm512_permute_ps(acc, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm512_add_ps(pairs, _mm512_permute_ps(pairs, _MM_SHUFFLE(1, 0, 3, 2)));
  };
  const __m512i lane_zero_of_each_row =
      _mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28, 0, 0, 0, 0, 0, 0, 0, 0);
  return _mm512_castps512_ps256(
      _mm512_permutex2var_ps(fold(first), lane_zero_of_each_row, fold(second)));
}

// How far ahead of the block being read the kernel prefetches its group's bytes (and the next
// group's), into L2: 8 KiB measured best of 1, 4, 8 and 16.
constexpr int64_t kPrefetchBytes = 8192;

// One group against kCols columns.
template <int kCols>
void dot_group(const float* table, const uint8_t* group, int64_t n_blocks, const uint8_t* x,
               size_t x_stride, const PreparedBlock* prepared, float* out, size_t out_stride) {
  const __m512i nibbles = _mm512_set1_epi8(0x0f);
  const __m512i rows_0_to_3 = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
  const __m512i rows_4_to_7 = _mm512_add_epi32(rows_0_to_3, _mm512_set1_epi32(4));
  __m512 acc_low_rows[kCols], acc_high_rows[kCols];
  for (int c = 0; c < kCols; ++c) acc_low_rows[c] = acc_high_rows[c] = _mm512_setzero_ps();
  for (int64_t b = 0; b < n_blocks; ++b) {
    const uint8_t* block = group + b * int64_t(kQ4_0GroupBlockBytes);
    const char* ahead = reinterpret_cast<const char*>(block) + kPrefetchBytes;
    _mm_prefetch(ahead, _MM_HINT_T1);
    _mm_prefetch(ahead + 64, _MM_HINT_T1);
    _mm_prefetch(ahead + 128, _MM_HINT_T1);
    const __m512i quants_0_to_3 = _mm512_loadu_si512(block + 2 * kQ4_0GroupRows);
    const __m512i quants_4_to_7 = _mm512_loadu_si512(block + 2 * kQ4_0GroupRows + 64);
    const __m512i low_0_to_3 = _mm512_and_si512(quants_0_to_3, nibbles);
    const __m512i high_0_to_3 = _mm512_and_si512(_mm512_srli_epi16(quants_0_to_3, 4), nibbles);
    const __m512i low_4_to_7 = _mm512_and_si512(quants_4_to_7, nibbles);
    const __m512i high_4_to_7 = _mm512_and_si512(_mm512_srli_epi16(quants_4_to_7, 4), nibbles);
    const __m256 weight_scales =
        _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(block)));
    // Per lane, scale = d_w(row) * d_x; with one column the product is formed before the lanes
    // are spread, with several after: the same products either way.
    __m512 spread_0_to_3, spread_4_to_7;
    if constexpr (kCols == 1) {
      const __m512 scales =
          _mm512_castps256_ps512(_mm256_mul_ps(weight_scales, _mm256_set1_ps(prepared[b].d)));
      spread_0_to_3 = _mm512_permutexvar_ps(rows_0_to_3, scales);
      spread_4_to_7 = _mm512_permutexvar_ps(rows_4_to_7, scales);
    } else {
      spread_0_to_3 = _mm512_permutexvar_ps(rows_0_to_3, _mm512_castps256_ps512(weight_scales));
      spread_4_to_7 = _mm512_permutexvar_ps(rows_4_to_7, _mm512_castps256_ps512(weight_scales));
    }
    for (int c = 0; c < kCols; ++c) {
      const uint8_t* activations =
          x + size_t(c) * x_stride + size_t(b) * sizeof(BlockQ8_0) + offsetof(BlockQ8_0, qs);
      const PreparedBlock& column = prepared[size_t(c) * size_t(n_blocks) + size_t(b)];
      const __m512i x_low =
          _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(activations)));
      const __m512i x_high = _mm512_broadcast_i32x4(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(activations + 16)));
      const __m512i offsets =
          _mm512_broadcast_i32x4(_mm_load_si128(reinterpret_cast<const __m128i*>(column.offsets)));
      __m512i sums_0_to_3 = _mm512_dpbusd_epi32(offsets, low_0_to_3, x_low);
      sums_0_to_3 = _mm512_dpbusd_epi32(sums_0_to_3, high_0_to_3, x_high);
      __m512i sums_4_to_7 = _mm512_dpbusd_epi32(offsets, low_4_to_7, x_low);
      sums_4_to_7 = _mm512_dpbusd_epi32(sums_4_to_7, high_4_to_7, x_high);
      __m512 scale_0_to_3 = spread_0_to_3, scale_4_to_7 = spread_4_to_7;
      if constexpr (kCols > 1) {
        const __m512 d = _mm512_set1_ps(column.d);
        scale_0_to_3 = _mm512_mul_ps(spread_0_to_3, d);
        scale_4_to_7 = _mm512_mul_ps(spread_4_to_7, d);
      }
      acc_low_rows[c] =
          _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums_0_to_3), scale_0_to_3, acc_low_rows[c]);
      acc_high_rows[c] =
          _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums_4_to_7), scale_4_to_7, acc_high_rows[c]);
    }
  }
  for (int c = 0; c < kCols; ++c)
    _mm256_storeu_ps(out + size_t(c) * out_stride, row_sums(acc_low_rows[c], acc_high_rows[c]));
}

}  // namespace

// Per group: a copy first (the group is rewritten in place), then per block index one 16-byte
// store of the 8 scales and two 64-byte stores of the 8 rows' quants; meanwhile the next group
// is prefetched, so that its copy reads from L2 (grouping runs inside decode's tasks on expert
// units just read from disk: 18 % of a 25 %-arena decode profile with plain copies).
void group_q4_0_rows_avx512(uint8_t* rows, int64_t n, int64_t n_rows) {
  STRATA_CHECK_EQ(n_rows % kQ4_0GroupRows, 0);
  const int64_t n_blocks = n / 32;
  const size_t row_bytes = size_t(n_blocks) * sizeof(BlockQ4_0);
  const size_t group_bytes = kQ4_0GroupRows * row_bytes;
  thread_local std::vector<uint8_t> storage;
  storage.resize(group_bytes);
  // A plain pointer: through the thread_local itself, every use is a __tls_get_addr call.
  uint8_t* const copy = storage.data();
  auto load_scale = [&](const uint8_t* block, int r) {
    uint16_t scale;
    std::memcpy(&scale, block + size_t(r) * row_bytes, 2);
    return int(scale);
  };
  auto load_quants = [&](const uint8_t* block, int r) {
    return _mm_loadu_si128(
        reinterpret_cast<const __m128i*>(block + size_t(r) * row_bytes + offsetof(BlockQ4_0, qs)));
  };
  for (int64_t first = 0; first < n_rows; first += kQ4_0GroupRows) {
    uint8_t* group = rows + size_t(first) * row_bytes;
    const bool has_next = first + kQ4_0GroupRows < n_rows;
    std::memcpy(copy, group, group_bytes);
    for (int64_t b = 0; b < n_blocks; ++b) {
      if (has_next) {
        const char* next =
            reinterpret_cast<const char*>(group) + group_bytes + b * int64_t(kQ4_0GroupBlockBytes);
        _mm_prefetch(next, _MM_HINT_T1);
        _mm_prefetch(next + 64, _MM_HINT_T1);
        _mm_prefetch(next + 128, _MM_HINT_T1);
      }
      const uint8_t* block = copy + size_t(b) * sizeof(BlockQ4_0);
      __m128i scales = _mm_cvtsi32_si128(load_scale(block, 0));
      scales = _mm_insert_epi16(scales, load_scale(block, 1), 1);
      scales = _mm_insert_epi16(scales, load_scale(block, 2), 2);
      scales = _mm_insert_epi16(scales, load_scale(block, 3), 3);
      scales = _mm_insert_epi16(scales, load_scale(block, 4), 4);
      scales = _mm_insert_epi16(scales, load_scale(block, 5), 5);
      scales = _mm_insert_epi16(scales, load_scale(block, 6), 6);
      scales = _mm_insert_epi16(scales, load_scale(block, 7), 7);
      auto four_rows = [&](int r) {
        __m512i quants = _mm512_castsi128_si512(load_quants(block, r));
        quants = _mm512_inserti32x4(quants, load_quants(block, r + 1), 1);
        quants = _mm512_inserti32x4(quants, load_quants(block, r + 2), 2);
        return _mm512_inserti32x4(quants, load_quants(block, r + 3), 3);
      };
      uint8_t* out = group + size_t(b) * kQ4_0GroupBlockBytes;
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out), scales);
      _mm512_storeu_si512(out + 2 * kQ4_0GroupRows, four_rows(0));
      _mm512_storeu_si512(out + 2 * kQ4_0GroupRows + 64, four_rows(4));
    }
  }
}

void vec_dot_q4_0_groups_avx512(int64_t n, const void* w, int n_groups, const void* x,
                                size_t x_stride, int n_cols, float* out, size_t out_stride) {
  const int64_t n_blocks = n / 32;
  // A plain pointer: through the thread_local itself, every use is a __tls_get_addr call.
  const float* table = fp16_to_fp32_table();
  thread_local std::vector<PreparedBlock> prepared_storage;
  prepared_storage.resize(size_t(n_cols) * size_t(n_blocks));
  PreparedBlock* prepared = prepared_storage.data();
  const auto* columns = static_cast<const uint8_t*>(x);
  for (int c = 0; c < n_cols; ++c)
    prepare_column(table, columns + size_t(c) * x_stride, n_blocks,
                   prepared + size_t(c) * size_t(n_blocks));
  const auto* weights = static_cast<const uint8_t*>(w);
  const size_t group_bytes = size_t(n_blocks) * kQ4_0GroupBlockBytes;
  // Groups outer: a group's 9 KB (2048 weights a row) stay in L1 while the columns pass.
  for (int g = 0; g < n_groups; ++g)
    in_groups_of_four(n_cols, [&](auto size, int first) {
      dot_group<size()>(table, weights + size_t(g) * group_bytes, n_blocks,
                        columns + size_t(first) * x_stride, x_stride,
                        prepared + size_t(first) * size_t(n_blocks),
                        out + size_t(first) * out_stride + size_t(g) * kQ4_0GroupRows, out_stride);
    });
}

}  // namespace strata
