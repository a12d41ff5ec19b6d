// Q8_K: the activation format of k-quant and IQ4_XS dot products (never a weight format).
#pragma once

#include "base/fp16.h"

#include <cstddef>
#include <cstdint>

namespace strata {

struct BlockQ8_K {
  float d;            // scale (float, not fp16)
  int8_t qs[256];     // value j = qs[j] * d
  int16_t bsums[16];  // sum of each group of 16 quants, for the k-quant minimum terms
};
static_assert(sizeof(BlockQ8_K) == 292);

void dequantize_row_q8_k(const void* blocks, float* out, int64_t n);
void quantize_row_q8_k(const float* in, void* blocks, int64_t n);

}  // namespace strata
