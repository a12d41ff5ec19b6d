// Q4_K: 256-weight super-blocks of 8 sub-blocks of 32, 4-bit quants, 6-bit scales and minimums
// ("type-1").
#pragma once

#include "base/fp16.h"

#include <cstddef>
#include <cstdint>

namespace strata {

struct BlockQ4_K {
  fp16_t d;            // super-block scale for the scales
  fp16_t dmin;         // super-block scale for the minimums
  uint8_t scales[12];  // 8 6-bit scales and 8 6-bit minimums, packed
  uint8_t qs[128];     // 4-bit quants
};                     // weight = d * scale * q - dmin * min
static_assert(sizeof(BlockQ4_K) == 144);

void dequantize_row_q4_k(const void* blocks, float* out, int64_t n);
void quantize_row_q4_k(const float* in, void* blocks, int64_t n);
void vec_dot_q4_k_scalar(int64_t n, const void* w, const void* x, size_t x_stride, int n_cols,
                         float* out);

}  // namespace strata
