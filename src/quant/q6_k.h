// Q6_K: 256-weight super-blocks of 16 sub-blocks of 16, 6-bit quants, 8-bit scales ("type-0").
#pragma once

#include "base/fp16.h"

#include <cstddef>
#include <cstdint>

namespace strata {

struct BlockQ6_K {
  uint8_t ql[128];    // low 4 bits of each quant
  uint8_t qh[64];     // high 2 bits
  int8_t scales[16];  // 8-bit sub-block scales (16 sub-blocks of 16)
  fp16_t d;           // super-block scale
};                    // weight = d * scale * (q - 32)
static_assert(sizeof(BlockQ6_K) == 210);

void dequantize_row_q6_k(const void* blocks, float* out, int64_t n);
void quantize_row_q6_k(const float* in, void* blocks, int64_t n);
void vec_dot_q6_k_scalar(int64_t n, const void* w, const void* x, size_t x_stride, int n_cols,
                         float* out);

}  // namespace strata
