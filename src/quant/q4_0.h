// Q4_0: 32 weights per block, 4-bit quants, one fp16 scale ("type-0": w = d * q).
#pragma once

#include "base/fp16.h"

#include <cstddef>
#include <cstdint>

namespace strata {

struct BlockQ4_0 {
  fp16_t d;        // scale
  uint8_t qs[16];  // weight j in the low nibble of qs[j], weight j + 16 in the high nibble;
                   // weight = (nibble - 8) * d
};
static_assert(sizeof(BlockQ4_0) == 18);

// quantize_row_q4_0 equals ggml's quantize_row_q4_0_ref, what llama-quantize writes without an
// importance matrix. Dot products take Q8_0 activations (quantize_row_q8_0). All functions are
// pure and safe to call concurrently; rows may start at any byte.
void dequantize_row_q4_0(const void* blocks, float* out, int64_t n);
void quantize_row_q4_0(const float* in, void* blocks, int64_t n);
void vec_dot_q4_0_scalar(int64_t n, const void* w, const void* x, size_t x_stride, int n_cols,
                         float* out);

}  // namespace strata
