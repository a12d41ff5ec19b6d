// BF16: a row of n little-endian bfloat16 values, the top 16 bits of an IEEE binary32 (no
// blocks). Dot products take BF16 activations (round to nearest even) and sum in float.
#include "quant/bf16.h"

#include <cstring>

namespace strata {
namespace {

float load_bf16(const uint8_t* row, int64_t i) {
  bf16_t b;  // rows may start at any byte
  std::memcpy(&b, row + i * 2, 2);
  return bf16_to_fp32(b);
}

}  // namespace

void dequantize_row_bf16(const void* blocks, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = load_bf16(static_cast<const uint8_t*>(blocks), i);
}

void quantize_row_bf16(const float* in, void* blocks, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const bf16_t b = fp32_to_bf16(in[i]);
    std::memcpy(static_cast<uint8_t*>(blocks) + i * 2, &b, 2);
  }
}

// Products summed in double, as ggml's generic ggml_vec_dot_bf16.
void vec_dot_bf16_scalar(int64_t n, const void* w, const void* x, size_t x_stride, int n_cols,
                         float* out) {
  const auto* weights = static_cast<const uint8_t*>(w);
  for (int c = 0; c < n_cols; ++c) {
    const auto* column = static_cast<const uint8_t*>(x) + size_t(c) * x_stride;
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) sum += double(load_bf16(weights, i) * load_bf16(column, i));
    out[c] = float(sum);
  }
}

}  // namespace strata
