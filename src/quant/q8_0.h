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

// quantize_row_q8_0 writes what llama.cpp's x86 AVX2 activation quantizer writes (d = max|x| /
// 127, quants x * 127 / max|x| rounded half to even), in scalar code; llama-quantize's scalar
// reference for weights rounds halves away from zero and differs in about 1 quant in 400,000
// (q8_0.cpp). The dot products REQUIRE activations from quantize_row_q8_0, whose
// quants are never -128 except in blocks whose fp16 scale is 0. All functions are pure and safe to
// call concurrently; rows may start at any byte.
void dequantize_row_q8_0(const void* blocks, float* out, int64_t n);
void quantize_row_q8_0(const float* in, void* blocks, int64_t n);
void vec_dot_q8_0_scalar(int64_t n, const void* w, const void* x, size_t x_stride, int n_cols,
                         float* out);

}  // namespace strata
