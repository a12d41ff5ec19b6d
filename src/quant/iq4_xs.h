// IQ4_XS: 256-weight super-blocks of 8 sub-blocks of 32, IQ4_NL's code book with 6-bit sub-block
// scales.
#pragma once

#include "base/fp16.h"

#include <cstddef>
#include <cstdint>

namespace strata {

struct BlockIQ4_XS {
  fp16_t d;             // super-block scale
  uint16_t scales_h;    // high 2 bits of the 6-bit scale of sub-block ib at bits 2*ib
  uint8_t scales_l[4];  // low 4 bits of sub-block ib's scale: nibble ib % 2 of scales_l[ib / 2]
  uint8_t qs[128];      // 8 sub-blocks of 32: 16 bytes each, nibbles as in IQ4_NL
};                      // weight = d * (scale - 32) * kIQ4NLValues[nibble]
static_assert(sizeof(BlockIQ4_XS) == 136);

void dequantize_row_iq4_xs(const void* blocks, float* out, int64_t n);
void quantize_row_iq4_xs(const float* in, void* blocks, int64_t n);
void vec_dot_iq4_xs_scalar(int64_t n, const void* w, const void* x, size_t x_stride, int n_cols,
                           float* out);

}  // namespace strata
