// Q8_0: 32 weights per block, 8-bit signed quants with one fp16 scale. Also the activation format
// of Q4_0, Q5_0, IQ4_NL and Q8_0 dot products.
#pragma once

#include "base/fp16.h"

#include <cstddef>
#include <cstdint>

namespace strata {

struct BlockQ8_0 {
  fp16_t d;       // scale
  int8_t qs[32];  // weight j = qs[j] * d
};
static_assert(sizeof(BlockQ8_0) == 34);

void dequantize_row_q8_0(const void* blocks, float* out, int64_t n);
void quantize_row_q8_0(const float* in, void* blocks, int64_t n);
void vec_dot_q8_0_scalar(int64_t n, const void* w, const void* x, size_t x_stride, int n_cols,
                         float* out);
void vec_dot_q8_0_avx2(int64_t n, const void* w, const void* x, size_t x_stride, int n_cols,
                       float* out);

}  // namespace strata
