// Activations as the CUDA kernels read them: rows converted to a weight format's activation
// format (its vec_dot_type: Q8_0, Q8_1, Q8_K, F16, BF16, or F32 as they are), holding the values
// quant/'s converters write, bit for bit, but stored apart so that every load is aligned:
//   Q8_0, Q8_1, Q8_K  int8 quants [rows][n_in]; d [rows][n_in / 32], the fp16-rounded scale of
//                     each chunk (Q8_K: its super-block's float scale, once per chunk); Q8_1's s
//                     [rows][n_in / 32]; Q8_K's group sums bsums [rows][n_in / 16]
//   F16, BF16         [rows][n_in] of their 16-bit values
//   F32               [rows][n_in] floats
// Also here: the chunk dot products with weight chunks (weight_chunks.h), and the element-wise
// arithmetic of the converters, shared by the conversion kernel and the host tests.
#pragma once

#include <cmath>
#include <cstdint>

#include "cuda/device_math.h"
#include "cuda/formats.h"
#include "cuda/weight_chunks.h"

#ifndef __CUDA_ARCH__
#include "base/fp16.h"
#endif

namespace strata::cuda {

struct ActivationRows {
  Format format = Format::kF32;
  int64_t n_in = 0;
  void* values = nullptr;    // int8, 16-bit or float values, as above
  float* d = nullptr;        // Q8_0, Q8_1, Q8_K
  float* s = nullptr;        // Q8_1
  int16_t* bsums = nullptr;  // Q8_K
  // Which stored row a kernel's row r reads: row_map[r] where given, row 0 for every r where
  // `broadcast` (one token's rows read by several experts), else r.
  const int32_t* row_map = nullptr;
  int32_t broadcast = 0;
};

STRATA_HD int64_t stored_row(const ActivationRows& x, int64_t row) {
  return x.broadcast ? 0 : x.row_map ? x.row_map[row] : row;
}

struct IntActivationChunk {
  uint32_t q[8];
  float d;
  float s;
  int32_t bsum[2];  // sums of the quants of each half (Q8_K)
};

STRATA_HD IntActivationChunk load_int_activation(const ActivationRows& x, int64_t row,
                                                 int64_t chunk) {
  const int64_t r = stored_row(x, row);
  const int64_t n_chunks = x.n_in / kChunkWeights;
  const uint32_t* q = reinterpret_cast<const uint32_t*>(static_cast<const int8_t*>(x.values) +
                                                        r * x.n_in + chunk * kChunkWeights);
  IntActivationChunk c;
  for (int i = 0; i < 8; ++i) c.q[i] = q[i];
  c.d = x.d[r * n_chunks + chunk];
  c.s = x.format == Format::kQ8_1 ? x.s[r * n_chunks + chunk] : 0.0f;
  for (int half = 0; half < 2; ++half)
    c.bsum[half] = x.format == Format::kQ8_K ? x.bsums[r * (x.n_in / 16) + 2 * chunk + half] : 0;
  return c;
}

// Value i of a row of F32, F16 or BF16 activations.
STRATA_HD float load_float_value(const ActivationRows& x, int64_t row, int64_t i) {
  const int64_t r = stored_row(x, row);
  if (x.format == Format::kF32) return static_cast<const float*>(x.values)[r * x.n_in + i];
  const uint16_t v = static_cast<const uint16_t*>(x.values)[r * x.n_in + i];
  return x.format == Format::kF16 ? half_to_float(v) : bf16_to_float(v);
}

// sum of the products of the 16 signed codes of a[0..3] and b[0..3]
STRATA_HD int32_t dot16(const uint32_t* a, const uint32_t* b) {
  int32_t sum = 0;
  for (int i = 0; i < 4; ++i) sum = dot4(a[i], b[i], sum);
  return sum;
}

// A chunk's share of a row's dot product, as the reference vec_dot computes a block's (q8_0.cpp,
// q4_1.cpp) or a super-block's (q4_k.cpp, q6_k.cpp) share, with exact integer sums.
template <Format kActivation>
STRATA_HD float chunk_dot(const IntChunk& w, const IntActivationChunk& x) {
  if constexpr (kActivation == Format::kQ8_K) {
    const int32_t scaled = w.scale[0] * dot16(w.q, x.q) + w.scale[1] * dot16(w.q + 4, x.q + 4);
    const int32_t mins = w.min[0] * x.bsum[0] + w.min[1] * x.bsum[1];
    return w.d * x.d * float(scaled) - w.dmin * x.d * float(mins);
  } else {
    const int32_t sum = dot16(w.q, x.q) + dot16(w.q + 4, x.q + 4);
    if constexpr (kActivation == Format::kQ8_1) return float(sum) * w.d * x.d + w.dmin * x.s;
    return float(sum) * w.d * x.d;
  }
}

// The converters' element-wise arithmetic (quant/block32.h, q8_k.cpp, f16.cpp, base/fp16.h).

// float -> IEEE half bits, round to nearest even.
STRATA_HD uint16_t float_to_half(float f) {
#ifdef __CUDA_ARCH__
  return __half_as_ushort(__float2half_rn(f));
#else
  return fp32_to_fp16(f);
#endif
}

// float -> bfloat16 bits, round to nearest even, NaNs quieted (ggml's).
STRATA_HD uint16_t float_to_bf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7fffffff) > 0x7f800000) return uint16_t((bits >> 16) | 64);
  bits += 0x7fff + ((bits >> 16) & 1);
  return uint16_t(bits >> 16);
}

// x86's cvtps2dq: round half to even, INT32_MIN for NaN and out-of-range values.
STRATA_HD int32_t round_like_cvtps2dq(float v) {
  if (!(std::fabs(v) < 2147483648.0f)) return INT32_MIN;
#ifdef __CUDA_ARCH__
  return __float2int_rn(v);
#else
  return int32_t(std::nearbyint(v));
#endif
}

// round half to even (ggml's nearest_int), for values well inside int range
STRATA_HD int32_t round_to_even(float v) {
#ifdef __CUDA_ARCH__
  return __float2int_rn(v);
#else
  return int32_t(std::lrint(v));
#endif
}

// Q8_0 and Q8_1 blocks: x * (127 / max|x|) to int8, d = max|x| / 127 (quant/block32.h).
STRATA_HD float q8_multiplier(float amax) { return amax != 0.0f ? 127.0f / amax : 0.0f; }
STRATA_HD int32_t q8_unsaturated(float x, float multiplier) {
  return round_like_cvtps2dq(x * multiplier);
}
STRATA_HD int8_t saturate_int8(int32_t q) { return int8_t(q < -128 ? -128 : q > 127 ? 127 : q); }
STRATA_HD float q8_scale(float amax) { return half_to_float(float_to_half(amax / 127.0f)); }
// Q8_1's s: the fp16 of the unrounded scale times the sum of the unsaturated quants.
STRATA_HD float q8_1_sum(float amax, int32_t quant_sum) {
  return half_to_float(float_to_half(amax / 127.0f * float(quant_sum)));
}

// Q8_K super-blocks: `largest` is the value of largest magnitude (the first such): it becomes
// -127 and sets d = 1 / iscale; an all-zero block has d = 0 and zero quants.
STRATA_HD float q8_k_iscale(float largest) { return largest != 0.0f ? -127.0f / largest : 0.0f; }
STRATA_HD int8_t q8_k_quant(float x, float iscale) {
  if (iscale == 0.0f) return 0;
  const int32_t q = round_to_even(iscale * x);
  return int8_t(q < 127 ? q : 127);
}
STRATA_HD float q8_k_scale(float iscale) { return iscale != 0.0f ? 1 / iscale : 0.0f; }

}  // namespace strata::cuda
