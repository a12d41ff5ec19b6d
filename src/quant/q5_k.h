// Q5_K: 256-weight super-blocks of 8 sub-blocks of 32, 5-bit quants, 6-bit scales and minimums.
#pragma once

#include "base/fp16.h"

#include <cstddef>
#include <cstdint>

namespace strata {

struct BlockQ5_K {
  fp16_t d;            // super-block scale for the scales
  fp16_t dmin;         // super-block scale for the minimums
  uint8_t scales[12];  // 8 6-bit scales and 8 6-bit minimums, packed as in Q4_K
  uint8_t qh[32];      // fifth bit of each quant
  uint8_t qs[128];     // low 4 bits
};
static_assert(sizeof(BlockQ5_K) == 176);

void dequantize_row_q5_k(const void* blocks, float* out, int64_t n);
void quantize_row_q5_k(const float* in, void* blocks, int64_t n);
void vec_dot_q5_k_scalar(int64_t n, const void* w, const void* x, size_t x_stride, int n_cols,
                         float* out);

}  // namespace strata
