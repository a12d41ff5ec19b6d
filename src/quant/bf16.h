// BF16: bfloat16; activations are converted to BF16 for its dot products, summed in F32.
#pragma once

#include "base/fp16.h"

#include <cstddef>
#include <cstdint>

namespace strata {

// A row is n little-endian bfloat16 (the top half of a float), no blocks; quantize_row_bf16
// rounds to nearest even and quiets NaNs, as ggml does. Pure functions, safe to call
// concurrently; rows may start at any byte.
void dequantize_row_bf16(const void* blocks, float* out, int64_t n);
void quantize_row_bf16(const float* in, void* blocks, int64_t n);
void vec_dot_bf16_scalar(int64_t n, const void* w, const void* x, size_t x_stride, int n_cols,
                         float* out);

}  // namespace strata
