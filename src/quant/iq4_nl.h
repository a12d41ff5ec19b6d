// IQ4_NL: 32 weights per block, 4-bit indices into a fixed non-linear code book, one fp16 scale.
#pragma once

#include "base/fp16.h"

#include <cstddef>
#include <cstdint>

namespace strata {

struct BlockIQ4_NL {
  fp16_t d;        // scale
  uint8_t qs[16];  // nibble indices into kIQ4NLValues; weight j low nibble, j + 16 high
};                 // weight = kIQ4NLValues[nibble] * d
static_assert(sizeof(BlockIQ4_NL) == 18);

// The non-linear 4-bit code book shared by IQ4_NL and IQ4_XS.
inline constexpr int8_t kIQ4NLValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                            1,    13,   25,  38,  53,  69,  89,  113};

// quantize_row_iq4_nl equals what llama-quantize writes without an importance matrix (a search
// over 15 candidate scales per block, iq4_nl.cpp). Dot products take Q8_0 activations and
// REQUIRE what q8_0.h says of them. All functions are pure and safe to call concurrently; rows
// may start at any byte.
void dequantize_row_iq4_nl(const void* blocks, float* out, int64_t n);
void quantize_row_iq4_nl(const float* in, void* blocks, int64_t n);
void vec_dot_iq4_nl_scalar(int64_t n, const void* w, const void* x, size_t x_stride, int n_cols,
                           float* out);

}  // namespace strata
