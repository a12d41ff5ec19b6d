// Q5_1: 32 weights per block, 5-bit quants with an fp16 scale and minimum.
#pragma once

#include "base/fp16.h"

#include <cstddef>
#include <cstdint>

namespace strata {

struct BlockQ5_1 {
  fp16_t d;        // scale
  fp16_t m;        // minimum
  uint8_t qh[4];   // bit j of this little-endian uint32 is bit 4 of weight j's quant
  uint8_t qs[16];  // low 4 bits, nibbles as in Q4_1; weight = quant * d + m
};
static_assert(sizeof(BlockQ5_1) == 24);

// quantize_row_q5_1 equals ggml's quantize_row_q5_1_ref. Dot products take Q8_1 activations
// (quantize_row_q8_1). All functions are pure and safe to call concurrently; rows may start at
// any byte.
void dequantize_row_q5_1(const void* blocks, float* out, int64_t n);
void quantize_row_q5_1(const float* in, void* blocks, int64_t n);
void vec_dot_q5_1_scalar(int64_t n, const void* w, const void* x, size_t x_stride, int n_cols,
                         float* out);

}  // namespace strata
