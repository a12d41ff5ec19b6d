// Q3_K: 256-weight super-blocks of 16 sub-blocks of 16, 3-bit quants, 6-bit scales ("type-0").
#pragma once

#include "base/fp16.h"

#include <cstddef>
#include <cstdint>

namespace strata {

struct BlockQ3_K {
  uint8_t hmask[32];   // high bit of each 3-bit quant
  uint8_t qs[64];      // low 2 bits
  uint8_t scales[12];  // 16 6-bit sub-block scales, packed
  fp16_t d;            // super-block scale
};                     // weight = d * (scale - 32) * (q - 4 if the high bit is clear else q)
static_assert(sizeof(BlockQ3_K) == 110);

void dequantize_row_q3_k(const void* blocks, float* out, int64_t n);
void quantize_row_q3_k(const float* in, void* blocks, int64_t n);
void vec_dot_q3_k_scalar(int64_t n, const void* w, const void* x, size_t x_stride, int n_cols,
                         float* out);

}  // namespace strata
