// AVX2 dot products of Q2_0 rows with Q8_0 activations. A 64-weight block is two halves of 32
// against two activation blocks: its 16 code bytes are broadcast to both 128-bit lanes and each
// group of 16 codes shifted into the low bits of its bytes (shifts 0 and 2 for weights 0-31, 4
// and 6 for 32-63), so each half is one OffsetQuants<1> of block32_avx2.h (code - 1). Half 0
// goes into the even chain and half 1 into the odd one, the two chains of the 32-weight formats
// (activation block 2b even, 2b + 1 odd), so a block of Q2_0 costs what two Q4_0 blocks cost
// after decoding, and the AVX-512 rows kernel (q2_0_avx512.cpp) can give the same bits.
#include "cpu/kernels/simd_kernels.h"

#include "cpu/kernels/block32_avx2.h"
#include "quant/q2_0.h"
#include "quant/q8_0.h"

#include <cstddef>

namespace strata {
namespace {

namespace avx2 = block32_avx2;
using Half = avx2::OffsetQuants<1>;
constexpr int64_t kBlockBytes = sizeof(BlockQ2_0);
constexpr int64_t kActivationBytes = sizeof(BlockQ8_0);

struct Halves {
  Half first, second;
};

Halves decode(const float* table, const uint8_t* block) {
  const __m256i both = _mm256_broadcastsi128_si256(
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + offsetof(BlockQ2_0, qs))));
  const __m256i mask = _mm256_set1_epi8(3);
  const __m256i first =
      _mm256_and_si256(_mm256_srlv_epi32(both, _mm256_set_epi32(2, 2, 2, 2, 0, 0, 0, 0)), mask);
  const __m256i second =
      _mm256_and_si256(_mm256_srlv_epi32(both, _mm256_set_epi32(6, 6, 6, 6, 4, 4, 4, 4)), mask);
  const __m256 d = avx2::broadcast_half(table, block + offsetof(BlockQ2_0, d));
  return {{first, d}, {second, d}};
}

// Block b of one weight row against activation blocks 2b and 2b + 1 of each column.
template <int kCols>
[[gnu::always_inline]] inline void accumulate_block(const float* table, const uint8_t* w,
                                                    const uint8_t* x, size_t x_stride, int64_t b,
                                                    __m256 (&even)[kCols], __m256 (&odd)[kCols]) {
  const Halves weights = decode(table, w + b * kBlockBytes);
  avx2::for_each_column<kCols>([&](auto c) {
    const uint8_t* first = x + size_t(c) * x_stride + 2 * b * kActivationBytes;
    const uint8_t* second = first + kActivationBytes;
    constexpr size_t kQuants = offsetof(BlockQ8_0, qs);
    even[c] = _mm256_fmadd_ps(_mm256_mul_ps(weights.first.d, avx2::broadcast_half(table, first)),
                              weights.first.dot(first + kQuants), even[c]);
    odd[c] = _mm256_fmadd_ps(_mm256_mul_ps(weights.second.d, avx2::broadcast_half(table, second)),
                             weights.second.dot(second + kQuants), odd[c]);
  });
}

template <int kCols>
void dot_columns(const float* table, int64_t n_blocks, const uint8_t* w, const uint8_t* x,
                 size_t x_stride, float* out) {
  __m256 even[kCols], odd[kCols];
  avx2::for_each_column<kCols>([&](auto c) { even[c] = odd[c] = _mm256_setzero_ps(); });
  for (int64_t b = 0; b < n_blocks; ++b) {
    _mm_prefetch(reinterpret_cast<const char*>(w) + b * kBlockBytes + avx2::kPrefetchBytes,
                 _MM_HINT_T1);
    accumulate_block<kCols>(table, w, x, x_stride, b, even, odd);
  }
  avx2::for_each_column<kCols>(
      [&](auto c) { out[c] = horizontal_sum(_mm256_add_ps(even[c], odd[c])); });
}

// kRows rows against one column, each row with dot_columns<1>'s float operations.
template <int kRows>
void dot_rows(const float* table, int64_t n_blocks, const uint8_t* w, size_t w_stride,
              const uint8_t* x, float* out) {
  __m256 even[kRows][1], odd[kRows][1];
  avx2::for_each_column<kRows>([&](auto r) { even[r][0] = odd[r][0] = _mm256_setzero_ps(); });
  for (int64_t b = 0; b < n_blocks; ++b) {
    avx2::for_each_column<kRows>([&](auto r) {
      prefetch_past_row_group(w, kRows * w_stride, (b * kRows + r) * kBlockBytes);
      accumulate_block<1>(table, w + size_t(r) * w_stride, x, 0, b, even[r], odd[r]);
    });
  }
  avx2::for_each_column<kRows>(
      [&](auto r) { out[r] = horizontal_sum(_mm256_add_ps(even[r][0], odd[r][0])); });
}

}  // namespace

void vec_dot_q2_0_avx2(int64_t n, const void* w, const void* x, size_t x_stride, int n_cols,
                       float* out) {
  const auto* columns = static_cast<const uint8_t*>(x);
  const float* table = avx2::half_table();
  in_groups_of_four(n_cols, [&](auto size, int first) {
    dot_columns<size()>(table, n / kQ2_0BlockSize, static_cast<const uint8_t*>(w),
                        columns + size_t(first) * x_stride, x_stride, out + first);
  });
}

void vec_dot_rows_q2_0_avx2(int64_t n, const void* w, size_t w_stride, int n_rows, const void* x,
                            float* out) {
  const auto* weights = static_cast<const uint8_t*>(w);
  const float* table = avx2::half_table();
  in_groups_of_four(n_rows, [&](auto size, int first) {
    dot_rows<size()>(table, n / kQ2_0BlockSize, weights + size_t(first) * w_stride, w_stride,
                     static_cast<const uint8_t*>(x), out + first);
  });
}

}  // namespace strata
