// Row-wise and element-wise float kernels. Each mirrors the arithmetic of the ggml CPU op it
// replaces (accumulating sums in double where ggml does), so that F32 models reproduce
// llama.cpp's logits to float rounding.
#pragma once

#include <cstdint>

namespace strata {

// out = x / sqrt(mean(x^2) + eps) * weight; `out` may alias `x`. weight may be null (no scale).
void rms_norm(const float* x, const float* weight, int64_t n, float eps, float* out);

// out = silu(gate) * up, silu(g) = g / (1 + e^-g); `out` may alias either input.
void silu_mul(const float* gate, const float* up, int64_t n, float* out);

// In-place softmax of n values (sum accumulated in double).
void softmax(float* x, int64_t n);

float sigmoid(float x);

// y += x * scale
void add_scaled(float* y, const float* x, float scale, int64_t n);

}  // namespace strata
