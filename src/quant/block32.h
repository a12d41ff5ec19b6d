// Pieces shared by the scalar code of the 32-weight block formats (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0,
// Q8_1, IQ4_NL): block access at any address, the activation quantizer behind Q8_0 and Q8_1,
// and the loop of the reference dot products. Internal to quant/.
#pragma once

#include "base/fp16.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace strata::block32 {

inline constexpr int kBlockSize = 32;

// Block `index` of a row. Rows may start at any byte (activation rows are packed back to back,
// tests offset them by one byte), so blocks are copied out instead of dereferenced in place.
template <class Block>
Block load(const void* row, int64_t index) {
  Block block;
  std::memcpy(&block, static_cast<const uint8_t*>(row) + index * int64_t(sizeof(Block)),
              sizeof(Block));
  return block;
}

template <class Block>
void store(void* row, int64_t index, const Block& block) {
  std::memcpy(static_cast<uint8_t*>(row) + index * int64_t(sizeof(Block)), &block, sizeof(Block));
}

// What x86's cvtps2dq makes of `v`: round half to even, and INT32_MIN (its "integer
// indefinite") for NaN and for values beyond int32.
inline int32_t convert_like_cvtps2dq(float v) {
  if (!(std::fabs(v) < 2147483648.0f)) return INT32_MIN;
  // Adding and removing 1.5 * 2^23 leaves no fraction bits, so the FPU's default rounding
  // (half to even) picks the integer; exact for |v| < 2^22, and larger floats are integers.
  const float rounded = std::fabs(v) < 4194304.0f ? (v + 12582912.0f) - 12582912.0f : v;
  return int32_t(rounded);
}

struct ActivationBlock {
  float d;      // max|x| / 127, before fp16 rounding
  int32_t sum;  // sum of the quants before saturation, wrapping like 32-bit vector adds
};

// Quantizes 32 activations to qs[j] * d, as llama.cpp's x86 AVX2 quantize_row_q8_0/q8_1 do;
// they differ from its scalar quantize_row_q8_0_ref in two ways, both followed here because the
// AVX2 build produced the golden logits: the multiplier is 127 / max|x| (not 1 / d, which can
// differ in the last bit), and x * 127 / max|x| rounds half to even (not half away from zero).
// The conversion and the saturating packs to int8 are cvtps2dq's and packsswb's, so even
// non-finite input gives the same bytes as there.
inline ActivationBlock quantize_activations(const float* x, int8_t* qs) {
  float amax = 0.0f;
  for (int j = 0; j < kBlockSize; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float multiplier = amax != 0.0f ? 127.0f / amax : 0.0f;
  uint32_t sum = 0;
  for (int j = 0; j < kBlockSize; ++j) {
    const int32_t q = convert_like_cvtps2dq(x[j] * multiplier);
    qs[j] = int8_t(std::clamp(q, int32_t(INT8_MIN), int32_t(INT8_MAX)));
    sum += uint32_t(q);
  }
  return {amax / 127.0f, int32_t(sum)};
}

// The reference dot products: out[c] = sum over blocks b of block_dot(w[b], x_c[b]), summed in
// float in block order, as ggml's generic vec_dot does.
template <class WeightBlock, class ActivationBlock, class BlockDot>
void scalar_vec_dot(int64_t n, const void* w, const void* x, size_t x_stride, int n_cols,
                    float* out, BlockDot block_dot) {
  const int64_t n_blocks = n / kBlockSize;
  for (int c = 0; c < n_cols; ++c) {
    const auto* column = static_cast<const uint8_t*>(x) + size_t(c) * x_stride;
    float sum = 0.0f;
    for (int64_t b = 0; b < n_blocks; ++b)
      sum += block_dot(load<WeightBlock>(w, b), load<ActivationBlock>(column, b));
    out[c] = sum;
  }
}

}  // namespace strata::block32
