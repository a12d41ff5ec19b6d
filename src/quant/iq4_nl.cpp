// IQ4_NL, block of 32 (18 bytes):
//   bytes 0-1   d       fp16 scale
//   bytes 2-17  qs[16]  4-bit indices into kIQ4NLValues: weight j < 16 in the low nibble of
//                       qs[j], weight j + 16 in the high one
// weight j = kIQ4NLValues[index] * d. Dot products pair it with Q8_0 activations.
#include "quant/iq4_nl.h"

#include "quant/block32.h"
#include "quant/q8_0.h"

#include <cmath>

namespace strata {
namespace {

int code(const BlockIQ4_NL& block, int j) {
  const int index = j < 16 ? block.qs[j] & 0x0f : block.qs[j - 16] >> 4;
  return kIQ4NLValues[index];
}

// The index of the code nearest to `value`, the larger one at an exact midpoint: the number of
// midpoints at or below `value`, found by binary search (the codes are sorted). Sums of two
// codes are exact in float, so the comparisons are exact.
int nearest_code(float value) {
  int index = 0;
  for (int step = 8; step > 0; step /= 2) {
    if (2.0f * value >= float(kIQ4NLValues[index + step - 1] + kIQ4NLValues[index + step]))
      index += step;
  }
  return index;
}

// Weighted least-squares fit of `x` by scale * code for the codes nearest to x * inverse_scale,
// with weights x^2 (larger weights matter more): sum w*q*x and sum w*q*q, whose ratio is the
// best scale for those codes and whose sumqx^2 / sumq2 is the error reduction it achieves.
struct Fit {
  float sumqx = 0.0f;
  float sumq2 = 0.0f;
};

Fit fit_codes(const float* x, float inverse_scale) {
  Fit fit;
  for (int j = 0; j < 32; ++j) {
    const float q = float(kIQ4NLValues[nearest_code(inverse_scale * x[j])]);
    const float weight = x[j] * x[j];
    fit.sumqx += weight * q * x[j];
    fit.sumq2 += weight * q * q;
  }
  return fit;
}

// The scale llama-quantize picks for one block (ggml's quantize_iq4_nl without an importance
// matrix): start from max|x| / 127, then try the 15 scales that map the largest-magnitude value
// to code values -134..-120 (negative scales flip the code book) and keep the best fit.
float choose_scale(const float* x) {
  constexpr float kAllZero = 1e-15f;  // ggml's GROUP_MAX_EPS: below this the block is zero
  constexpr int kTries = 7;
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < 32; ++j) {
    if (std::fabs(x[j]) > amax) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  if (amax < kAllZero) return 0.0f;
  Fit fit = fit_codes(x, 1.0f / (-max / kIQ4NLValues[0]));
  float scale = fit.sumq2 > 0.0f ? fit.sumqx / fit.sumq2 : 0.0f;
  float best = scale * fit.sumqx;
  for (int attempt = -kTries; attempt <= kTries; ++attempt) {
    fit = fit_codes(x, float(attempt + kIQ4NLValues[0]) / max);
    if (fit.sumq2 > 0.0f && fit.sumqx * fit.sumqx > best * fit.sumq2) {
      scale = fit.sumqx / fit.sumq2;
      best = scale * fit.sumqx;
    }
  }
  return scale;
}

}  // namespace

void dequantize_row_iq4_nl(const void* blocks, float* out, int64_t n) {
  for (int64_t b = 0; b < n / block32::kBlockSize; ++b) {
    const auto block = block32::load<BlockIQ4_NL>(blocks, b);
    const float d = fp16_to_fp32(block.d);
    for (int j = 0; j < 32; ++j) out[b * 32 + j] = d * float(code(block, j));
  }
}

// Equal to what llama-quantize writes for IQ4_NL without an importance matrix. (Recent ggml
// made quantize_row_iq4_nl_ref a single-pass variant without the scale search; model files
// come from the search, so that is the behaviour kept here.)
void quantize_row_iq4_nl(const float* in, void* blocks, int64_t n) {
  for (int64_t b = 0; b < n / block32::kBlockSize; ++b) {
    const float* x = in + b * 32;
    const float scale = choose_scale(x);
    const float inverse = scale != 0.0f ? 1.0f / scale : 0.0f;
    BlockIQ4_NL block;
    block.d = fp32_to_fp16(scale);
    for (int j = 0; j < 16; ++j)
      block.qs[j] = uint8_t(nearest_code(inverse * x[j]) | nearest_code(inverse * x[j + 16]) << 4);
    block32::store(blocks, b, block);
  }
}

void vec_dot_iq4_nl_scalar(int64_t n, const void* w, const void* x, size_t x_stride, int n_cols,
                           float* out) {
  block32::scalar_vec_dot<BlockIQ4_NL, BlockQ8_0>(
      n, w, x, x_stride, n_cols, out, [](const BlockIQ4_NL& wb, const BlockQ8_0& xb) {
        int sum = 0;
        for (int j = 0; j < 32; ++j) sum += code(wb, j) * int(xb.qs[j]);
        return float(sum) * fp16_to_fp32(wb.d) * fp16_to_fp32(xb.d);
      });
}

}  // namespace strata
