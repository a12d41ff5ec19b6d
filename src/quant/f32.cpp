// F32: a row of n little-endian IEEE binary32 values (no blocks). Dot products take F32
// activations.
#include "quant/f32.h"

#include <cstring>

namespace strata {

void dequantize_row_f32(const void* blocks, float* out, int64_t n) {
  std::memcpy(out, blocks, size_t(n) * sizeof(float));
}

void quantize_row_f32(const float* in, void* blocks, int64_t n) {
  std::memcpy(blocks, in, size_t(n) * sizeof(float));
}

// Float products summed in double, as ggml's generic ggml_vec_dot_f32.
void vec_dot_f32_scalar(int64_t n, const void* w, const void* x, size_t x_stride, int n_cols,
                        float* out) {
  const auto* weights = static_cast<const uint8_t*>(w);
  for (int c = 0; c < n_cols; ++c) {
    const auto* column = static_cast<const uint8_t*>(x) + size_t(c) * x_stride;
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) {
      float wi, xi;  // rows may start at any byte
      std::memcpy(&wi, weights + i * 4, 4);
      std::memcpy(&xi, column + i * 4, 4);
      sum += double(wi * xi);
    }
    out[c] = float(sum);
  }
}

}  // namespace strata
