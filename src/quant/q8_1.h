// Q8_1: the activation format of Q4_1 and Q5_1 dot products (never a weight format here).
#pragma once

#include "base/fp16.h"

#include <cstddef>
#include <cstdint>

namespace strata {

struct BlockQ8_1 {
  fp16_t d;       // scale
  fp16_t s;       // d * sum(qs), used by the Q4_1/Q5_1 dot products for the minimum term
  int8_t qs[32];  // value j = qs[j] * d
};
static_assert(sizeof(BlockQ8_1) == 36);

// quantize_row_q8_1 writes what llama.cpp's x86 AVX2 quantize_row_q8_1 writes (as Q8_0's, plus
// s). Pure, safe to call concurrently; rows may start at any byte.
void dequantize_row_q8_1(const void* blocks, float* out, int64_t n);
void quantize_row_q8_1(const float* in, void* blocks, int64_t n);

}  // namespace strata
