// F32: plain IEEE floats; activations stay F32 for its dot products.
#pragma once

#include "base/fp16.h"

#include <cstddef>
#include <cstdint>

namespace strata {

// A row is n little-endian floats, no blocks. Pure functions, safe to call concurrently; rows may
// start at any byte.
void dequantize_row_f32(const void* blocks, float* out, int64_t n);
void quantize_row_f32(const float* in, void* blocks, int64_t n);
void vec_dot_f32_scalar(int64_t n, const void* w, const void* x, size_t x_stride, int n_cols,
                        float* out);

}  // namespace strata
