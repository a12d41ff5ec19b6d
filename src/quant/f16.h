// F16: IEEE half floats; activations are converted to F16 for its dot products (as ggml does),
// products are summed in F32.
#pragma once

#include "base/fp16.h"

#include <cstddef>
#include <cstdint>

namespace strata {

// A row is n little-endian IEEE halves, no blocks; quantize_row_f16 rounds to nearest even (as
// F16C and ggml do). Pure functions, safe to call concurrently; rows may start at any byte.
void dequantize_row_f16(const void* blocks, float* out, int64_t n);
void quantize_row_f16(const float* in, void* blocks, int64_t n);
void vec_dot_f16_scalar(int64_t n, const void* w, const void* x, size_t x_stride, int n_cols,
                        float* out);

}  // namespace strata
