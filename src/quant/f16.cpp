// F16: a row of n little-endian IEEE binary16 values (no blocks). Dot products take F16
// activations (converted with round to nearest even, as ggml does) and sum in float.
#include "quant/f16.h"

#include <cstring>

namespace strata {
namespace {

float load_half(const uint8_t* row, int64_t i) {
  fp16_t h;  // rows may start at any byte
  std::memcpy(&h, row + i * 2, 2);
  return fp16_to_fp32(h);
}

}  // namespace

void dequantize_row_f16(const void* blocks, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = load_half(static_cast<const uint8_t*>(blocks), i);
}

void quantize_row_f16(const float* in, void* blocks, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const fp16_t h = fp32_to_fp16(in[i]);
    std::memcpy(static_cast<uint8_t*>(blocks) + i * 2, &h, 2);
  }
}

// Products of the exact float values summed in double, as ggml's generic ggml_vec_dot_f16.
void vec_dot_f16_scalar(int64_t n, const void* w, const void* x, size_t x_stride, int n_cols,
                        float* out) {
  const auto* weights = static_cast<const uint8_t*>(w);
  for (int c = 0; c < n_cols; ++c) {
    const auto* column = static_cast<const uint8_t*>(x) + size_t(c) * x_stride;
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) sum += double(load_half(weights, i) * load_half(column, i));
    out[c] = float(sum);
  }
}

}  // namespace strata
