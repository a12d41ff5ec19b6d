// Q2_0, Strata's own 2-bit format for routed experts: 64 weights per block, one signed fp16
// scale and 64 two-bit codes; weight = (code - 1) * d, so a block's grid is {-d, 0, d, 2d}, and a
// negative d mirrors it to {-2|d|, -|d|, 0, |d|} for blocks whose long tail is negative. 18 bytes
// per 64 weights: 2.25 bits per weight.
//
// GGUF stores it under type id 1000 (QuantType::kQ2_0), far above ggml's ids (39 is the highest
// in the llama.cpp release our golden files come from), so a file holding it is refused by
// llama.cpp rather than misread; `strata inspect` says so.
#pragma once

#include "base/fp16.h"

#include <cstddef>
#include <cstdint>

namespace strata {

struct BlockQ2_0 {
  fp16_t d;        // signed scale
  uint8_t qs[16];  // the code of weight j in bits 2 * (j / 16) and 2 * (j / 16) + 1 of qs[j % 16]
};
static_assert(sizeof(BlockQ2_0) == 18);

inline constexpr int64_t kQ2_0BlockSize = 64;

// The quantizer searches signed scales per block (q2_0.cpp) and minimizes the squared error
// weighted by `importance` (one non-negative weight per input value, e.g. the mean square of
// the activations that input channel meets); quantize_row_q2_0 weighs every value alike. Dot
// products take Q8_0 activations (quantize_row_q8_0), two activation blocks per weight block.
// All functions are pure and safe to call concurrently; rows may start at any byte.
void dequantize_row_q2_0(const void* blocks, float* out, int64_t n);
void quantize_row_q2_0(const float* in, void* blocks, int64_t n);
void quantize_row_q2_0_weighted(const float* in, const float* importance, void* blocks, int64_t n);
void vec_dot_q2_0_scalar(int64_t n, const void* w, const void* x, size_t x_stride, int n_cols,
                         float* out);

}  // namespace strata
