// The AVX2 dot-product skeleton of the 32-weight block formats, and the byte tricks their
// decoders share. Include only from *_avx2.cpp files (compiled with -mavx2 -mfma -mf16c).
//
// A format supplies a decoder that turns one weight block into 32 int8 quants in a register
// (SignedQuants, OffsetQuants or MinimumQuants below), once; the skeleton then dots those quants
// with the int8 activations of up to four columns (maddubs + madd: 32 products -> 8 int32
// partial sums, exact), converts the partial sums to float and accumulates scale * partials per
// column. Per column and block that is 6-7 vector operations that only ports 0 and 1 execute,
// the bottleneck (decoding adds 1-3 per block, shared by the group). Computing the scale
// products 8 blocks at a time instead of one multiply per block was tried: the scalar lookups
// and stores it needs cost more than the multiply.
//
// Determinism: every column runs the same sequence of float operations whichever group it is
// in, then a fixed horizontal sum. A format chooses its accumulation (Format::kChains):
//  * 2 chains, even blocks into one accumulator and odd blocks into another: hides the FMA
//    latency; Q4_0 streams ~30 % faster on one core than with one chain (vec_dot_legacy_bench).
//  * 1 chain, blocks in order: the order of llama.cpp's AVX2 vec_dot and llamafile GEMM, so our
//    sums round exactly as theirs. That matters because a 1-ulp difference can flip an 8-bit
//    activation quant downstream, a visible logit difference (tests/golden_parity_test.cpp).
//    Q8_0 uses it: at 34 bytes a block it is memory-bound on two threads either way (21.3 vs
//    21.4 GB/s measured), so exact parity costs nothing there.
// Only the integer decoding is shared between the columns of a group.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "base/fp16.h"
#include "cpu/kernels/groups_of_four.h"
#include "cpu/kernels/horizontal_sum_avx2.h"
#include "cpu/kernels/row_prefetch.h"

namespace strata::block32_avx2 {

// How far ahead of the block being decoded the columns kernel prefetches its weight row, into L2
// (the rows kernel's scheme is in row_prefetch.h). Without it a 1-column Q4_0 product streams at
// about half the DRAM bandwidth: rows are a few KiB, and the hardware prefetcher, which stops at
// page boundaries, ramps up again at each. 4 KiB ahead measured best (1-8 KiB tried); into L1
// (T0) it was slower, as L1's few fill buffers limit the misses in flight. Prefetches past the
// row's end never fault, and the next row usually follows.
inline constexpr int64_t kPrefetchBytes = 4096;

// fp16 -> fp32 for every half (base/fp16.h). The kernels look scales up there rather than
// convert them with F16C: vcvtph2ps (and the vpinsrw that feeds it a 16-bit scalar) need port 5,
// which unpacking already loads, while a lookup broadcast straight from the table costs only loads.
inline const float* half_table() { return fp16_to_fp32_table(); }

inline uint16_t load_u16(const uint8_t* p) {
  uint16_t value;
  std::memcpy(&value, p, 2);
  return value;
}

// The fp16 at `p` as 8 equal floats.
inline __m256 broadcast_half(const float* table, const uint8_t* p) {
  return _mm256_broadcast_ss(table + load_u16(p));
}

// 16 bytes of nibbles -> 32 bytes: the low nibbles (weights 0-15), then the high (16-31). The
// 16 bytes are broadcast to both halves by the load itself and the upper half shifted by 4 bits,
// which needs no cross-lane shuffle.
inline __m256i unpack_nibbles(const uint8_t* qs) {
  const __m256i both =
      _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qs)));
  const __m256i shifted = _mm256_srlv_epi32(both, _mm256_set_epi32(4, 4, 4, 4, 0, 0, 0, 0));
  return _mm256_and_si256(shifted, _mm256_set1_epi8(0x0f));
}

// Byte j = 0xff where bit j of the little-endian uint32 at `bits` is set, 0 elsewhere.
inline __m256i expand_bits(const uint8_t* bits) {
  uint32_t word;
  std::memcpy(&word, bits, 4);
  // Byte j gets byte j / 8 of the word, then is tested against bit j % 8.
  const __m256i spread = _mm256_shuffle_epi8(
      _mm256_set1_epi32(int(word)), _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202,
                                                      0x0101010101010101, 0x0000000000000000));
  const __m256i bit = _mm256_set1_epi64x(int64_t(0x8040201008040201));
  return _mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit);
}

// Sums of 4 neighbouring int16 pairs -> 8 floats (exact: the sums stay far below 2^24).
inline __m256 pair_sums_to_float(__m256i pairs) {
  return _mm256_cvtepi32_ps(_mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
}

// One block of 32 activations quantized with the instructions of llama.cpp's AVX2
// quantize_row_q8_0/q8_1 (quant/block32.h's quantize_activations in scalar code): max|x| by
// maxps, multiplier 127 / max, roundps to nearest even, cvtps2dq, saturating packs. Returns
// d = max / 127 (before fp16 rounding) and the wrapping int32 sum of the unsaturated quants.
struct QuantizedActivations {
  float d;
  int32_t sum;
};

inline QuantizedActivations quantize_activations(const float* x, int8_t* qs) {
  __m256 v[4];
  __m256 amax = _mm256_setzero_ps();
  for (int k = 0; k < 4; ++k) {
    v[k] = _mm256_loadu_ps(x + 8 * k);
    amax = _mm256_max_ps(amax, _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v[k]));
  }
  __m128 max4 = _mm_max_ps(_mm256_extractf128_ps(amax, 1), _mm256_castps256_ps128(amax));
  max4 = _mm_max_ps(max4, _mm_movehl_ps(max4, max4));
  max4 = _mm_max_ss(max4, _mm_movehdup_ps(max4));
  const float max = _mm_cvtss_f32(max4);
  const __m256 multiplier = _mm256_set1_ps(max != 0.0f ? 127.0f / max : 0.0f);
  __m256i q[4];
  for (int k = 0; k < 4; ++k) {
    const __m256 scaled = _mm256_mul_ps(v[k], multiplier);
    q[k] =
        _mm256_cvtps_epi32(_mm256_round_ps(scaled, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  const __m256i sum8 = _mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3]));
  __m128i sum = _mm_add_epi32(_mm256_castsi256_si128(sum8), _mm256_extracti128_si256(sum8, 1));
  sum = _mm_add_epi32(sum, _mm_unpackhi_epi64(sum, sum));
  sum = _mm_add_epi32(sum, _mm_shuffle_epi32(sum, 1));
  // The packs work within 128-bit lanes; the permutation puts the 32 bytes back in order.
  const __m256i bytes =
      _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
  _mm256_storeu_si256(
      reinterpret_cast<__m256i*>(qs),
      _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
  return {max / 127.0f, _mm_cvtsi128_si32(sum)};
}

inline uint16_t float_to_half(float value) {
  return uint16_t(_cvtss_sh(value, _MM_FROUND_TO_NEAREST_INT));
}

// Weights that are signed int8 of any range (Q8_0, IQ4_NL). maddubs multiplies unsigned by
// signed bytes, so the weights' magnitudes are kept and their signs moved onto the activations.
// REQUIRES of activations: no quant is -128 (its negation overflows). Our activation quantizer
// writes -128 only in blocks whose fp16 scale is zero, where the product is zero anyway.
struct SignedQuants {
  __m256i magnitude;
  __m256i sign_source;
  __m256 d;
  static constexpr bool kHasMinimum = false;

  static SignedQuants from(__m256i quants, __m256 d) {
    return {_mm256_sign_epi8(quants, quants), quants, d};
  }
  __m256 dot(const uint8_t* activations) const {
    const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(activations));
    return pair_sums_to_float(_mm256_maddubs_epi16(magnitude, _mm256_sign_epi8(x, sign_source)));
  }
};

// Weights q - kOffset with small unsigned q (Q4_0: nibble - 8, Q5_0: 5 bits - 16). maddubs takes
// q as it is and the offset times the activations is subtracted in 16 bits (pairs stay below
// 2 * 31 * 128); per column that is one maddubs and a subtraction, cheaper than moving signs.
template <int kOffset>
struct OffsetQuants {
  __m256i quants;
  __m256 d;
  static constexpr bool kHasMinimum = false;

  __m256 dot(const uint8_t* activations) const {
    const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(activations));
    const __m256i offset_pairs = _mm256_maddubs_epi16(_mm256_set1_epi8(kOffset), x);
    return pair_sums_to_float(_mm256_sub_epi16(_mm256_maddubs_epi16(quants, x), offset_pairs));
  }
};

// Weights q * d + m with unsigned q (Q4_1, Q5_1: 0..31); the minimum's share, m times the sum of
// the activations, comes from the Q8_1 activations' s field.
struct MinimumQuants {
  __m256i quants;
  __m256 d;
  float m;
  static constexpr bool kHasMinimum = true;

  __m256 dot(const uint8_t* activations) const {
    const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(activations));
    return pair_sums_to_float(_mm256_maddubs_epi16(quants, x));
  }
};

// Calls f(std::integral_constant<int, c>) for c = 0 .. kCols - 1. Constant indices let the
// compiler keep per-column accumulator arrays in registers (a loop over c leaves them in memory).
template <int kCols, class F>
[[gnu::always_inline]] inline void for_each_column(F&& f) {
  [&]<int... kColumn>(std::integer_sequence<int, kColumn...>) {
    (f(std::integral_constant<int, kColumn>{}), ...);
  }
  (std::make_integer_sequence<int, kCols>{});
}

// One weight block dotted with block `b` of each column. Activation blocks start with their
// fp16 scale d; for Q8_1 the fp16 s (d * sum of quants) follows, then the 32 quants.
template <class Format, int kCols>
[[gnu::always_inline]] inline void accumulate_block(const float* table, const uint8_t* w,
                                                    const uint8_t* x, size_t x_stride, int64_t b,
                                                    __m256 (&acc)[kCols],
                                                    float (&minimum_terms)[kCols]) {
  using Activation = typename Format::ActivationBlock;
  constexpr size_t kQuantsOffset = sizeof(Activation) - 32;
  const auto weights = Format::decode(table, w + b * int64_t(sizeof(typename Format::Block)));
  for_each_column<kCols>([&](auto c) {
    const uint8_t* block = x + size_t(c) * x_stride + b * int64_t(sizeof(Activation));
    const __m256 scale = _mm256_mul_ps(weights.d, broadcast_half(table, block));
    acc[c] = _mm256_fmadd_ps(scale, weights.dot(block + kQuantsOffset), acc[c]);
    if constexpr (decltype(weights)::kHasMinimum)
      minimum_terms[c] += weights.m * table[load_u16(block + 2)];
  });
}

template <class Format, int kCols>
void dot_columns(const float* table, int64_t n_blocks, const uint8_t* w, const uint8_t* x,
                 size_t x_stride, float* out) {
  static_assert(Format::kChains == 1 || Format::kChains == 2);
  __m256 even[kCols], odd[kCols];
  float minimum_terms[kCols];
  for_each_column<kCols>([&](auto c) {
    even[c] = odd[c] = _mm256_setzero_ps();
    minimum_terms[c] = 0.0f;
  });
  auto& second = Format::kChains == 2 ? odd : even;
  int64_t b = 0;
  for (; b + 2 <= n_blocks; b += 2) {
    _mm_prefetch(reinterpret_cast<const char*>(w) + b * int64_t(sizeof(typename Format::Block)) +
                     kPrefetchBytes,
                 _MM_HINT_T1);
    accumulate_block<Format, kCols>(table, w, x, x_stride, b, even, minimum_terms);
    accumulate_block<Format, kCols>(table, w, x, x_stride, b + 1, second, minimum_terms);
  }
  if (b < n_blocks) accumulate_block<Format, kCols>(table, w, x, x_stride, b, even, minimum_terms);
  for_each_column<kCols>([&](auto c) {
    const __m256 sum = Format::kChains == 2 ? _mm256_add_ps(even[c], odd[c]) : even[c];
    out[c] = horizontal_sum(sum) + minimum_terms[c];
  });
}

// kRows weight rows, w_stride bytes apart, dotted with one activation column: decode's shape.
// Each row runs exactly dot_columns<Format, 1>'s float operations, so results are bit-identical
// to it; the rows share the activation loads (and what a format computes from them alone) and
// one call. That matters for short rows: an expert's down projection in strata-tiny-moe is 2
// blocks long, where the per-row call and horizontal sum cost as much as the products.
template <class Format, int kRows>
void dot_rows(const float* table, int64_t n_blocks, const uint8_t* w, size_t w_stride,
              const uint8_t* x, float* out) {
  static_assert(Format::kChains == 1 || Format::kChains == 2);
  __m256 even[kRows][1], odd[kRows][1];
  float minimum_terms[kRows][1];
  for_each_column<kRows>([&](auto r) {
    even[r][0] = odd[r][0] = _mm256_setzero_ps();
    minimum_terms[r][0] = 0.0f;
  });
  auto& second = Format::kChains == 2 ? odd : even;
  int64_t b = 0;
  for (; b + 2 <= n_blocks; b += 2) {
    for_each_column<kRows>([&](auto r) {
      const uint8_t* row = w + size_t(r) * w_stride;
      prefetch_past_row_group(w, kRows * w_stride,
                              (b * kRows + 2 * r) * int64_t(sizeof(typename Format::Block)));
      accumulate_block<Format, 1>(table, row, x, 0, b, even[r], minimum_terms[r]);
      accumulate_block<Format, 1>(table, row, x, 0, b + 1, second[r], minimum_terms[r]);
    });
  }
  if (b < n_blocks)
    for_each_column<kRows>([&](auto r) {
      accumulate_block<Format, 1>(table, w + size_t(r) * w_stride, x, 0, b, even[r],
                                  minimum_terms[r]);
    });
  for_each_column<kRows>([&](auto r) {
    const __m256 sum = Format::kChains == 2 ? _mm256_add_ps(even[r][0], odd[r][0]) : even[r][0];
    out[r] = horizontal_sum(sum) + minimum_terms[r][0];
  });
}

// The VecDotRowsFn of a format: rows in groups of four, then the remainder as one group.
template <class Format>
void vec_dot_rows(int64_t n, const void* w, size_t w_stride, int n_rows, const void* x,
                  float* out) {
  const auto* weights = static_cast<const uint8_t*>(w);
  const float* table = half_table();
  in_groups_of_four(n_rows, [&](auto size, int first) {
    dot_rows<Format, size()>(table, n / 32, weights + size_t(first) * w_stride, w_stride,
                             static_cast<const uint8_t*>(x), out + first);
  });
}

// The VecDotFn of a format: columns in groups of four, then the remainder as one group.
template <class Format>
void vec_dot(int64_t n, const void* w, const void* x, size_t x_stride, int n_cols, float* out) {
  const auto* columns = static_cast<const uint8_t*>(x);
  const float* table = half_table();
  in_groups_of_four(n_cols, [&](auto size, int first) {
    dot_columns<Format, size()>(table, n / 32, static_cast<const uint8_t*>(w),
                                columns + size_t(first) * x_stride, x_stride, out + first);
  });
}

}  // namespace strata::block32_avx2
