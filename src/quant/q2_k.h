// Q2_K: 256-weight super-blocks of 16 sub-blocks of 16, 2-bit quants, 4-bit scales and minimums
// ("type-1").
#pragma once

#include "base/fp16.h"

#include <cstddef>
#include <cstdint>

namespace strata {

struct BlockQ2_K {
  uint8_t scales[16];  // sub-block i (16 weights): scale in the low nibble, minimum in the high
  uint8_t qs[64];      // 2-bit quants
  fp16_t d;            // super-block scale for the scales
  fp16_t dmin;         // super-block scale for the minimums
};                     // weight = d * scale * q - dmin * min
static_assert(sizeof(BlockQ2_K) == 84);

void dequantize_row_q2_k(const void* blocks, float* out, int64_t n);
void quantize_row_q2_k(const float* in, void* blocks, int64_t n);
void vec_dot_q2_k_scalar(int64_t n, const void* w, const void* x, size_t x_stride, int n_cols,
                         float* out);

}  // namespace strata
