// Q2_0, block of 64 (18 bytes):
//   bytes 0-1   d       signed fp16 scale
//   bytes 2-17  qs[16]  the code of weight j in bits 2 * (j / 16) .. 2 * (j / 16) + 1 of qs[j % 16]
// weight j = (code - 1) * d. Dot products pair weights 0-31 with one Q8_0 activation block and
// weights 32-63 with the next. (Codes of weights j, j + 16, j + 32, j + 48 share a byte so that a
// SIMD decoder gets each group of 16 from one broadcast by a shift and a mask.)
#include "quant/q2_0.h"

#include "quant/block32.h"
#include "quant/q8_0.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace strata {
namespace {

constexpr int kBlock = int(kQ2_0BlockSize);
constexpr float kLargestHalf = 65504.0f;
constexpr auto kEqualImportance = [] {
  std::array<float, kBlock> ones{};
  ones.fill(1.0f);
  return ones;
}();

int code(const BlockQ2_0& block, int j) { return (block.qs[j % 16] >> (2 * (j / 16))) & 3; }

// The grid point (code - 1) nearest x / d, for d != 0.
int nearest_quant(float x, float inverse_d) {
  return std::clamp(int(std::nearbyint(x * inverse_d)), -1, 2);
}

struct Fit {
  float d = 0.0f;  // already an fp16 value
  float error = INFINITY;
};

// The weighted squared error of the block at scale d (rounded to fp16 first, as stored), each
// weight on its nearest grid point.
Fit evaluate(const float* x, const float* importance, float d) {
  const float d16 = fp16_to_fp32(fp32_to_fp16(std::clamp(d, -kLargestHalf, kLargestHalf)));
  if (d16 == 0.0f) return {};
  const float inverse = 1.0f / d16;
  float error = 0.0f;
  for (int j = 0; j < kBlock; ++j) {
    const float e = x[j] - float(nearest_quant(x[j], inverse)) * d16;
    error += importance[j] * e * e;
  }
  return {d16, error};
}

// Codes nearest x / d, then the weighted least-squares scale for those codes:
// d = sum(w q x) / sum(w q^2). Returns `d` itself when no weight lands off zero.
float refit(const float* x, const float* importance, float d) {
  const float inverse = 1.0f / d;
  float numerator = 0.0f, denominator = 0.0f;
  for (int j = 0; j < kBlock; ++j) {
    const float q = float(nearest_quant(x[j], inverse));
    numerator += importance[j] * q * x[j];
    denominator += importance[j] * q * q;
  }
  return denominator > 0.0f ? numerator / denominator : d;
}

// Candidate scales ±r * max|x| for r = 0.20, 0.24, ..., 0.96 (the grid reaches 2d on one side
// and -d on the other; blocks with an outlier do best clipping it, at r well below one half),
// each refit twice by least squares (codes, then the scale for those codes) and kept if its
// weighted error is the smallest so far (the first of equal errors, so the result is
// deterministic). On Gaussian blocks, with or without outliers, this lands within 0.01 % of the
// best fp16 scale (q2_0_test.cpp tries them all); candidates from r = 0.42 up only were 3 %
// worse on blocks with outliers.
BlockQ2_0 quantize_block(const float* x, const float* importance) {
  float amax = 0.0f;
  for (int j = 0; j < kBlock; ++j) amax = std::max(amax, std::fabs(x[j]));
  Fit best;
  if (amax > 0.0f && std::isfinite(amax)) {
    constexpr int kSteps = 20;
    for (const float sign : {1.0f, -1.0f}) {
      for (int k = 0; k < kSteps; ++k) {
        float d = sign * (0.20f + 0.04f * float(k)) * amax;
        for (int i = 0; i < 2; ++i) d = refit(x, importance, d);
        const Fit fit = evaluate(x, importance, d);
        if (fit.error < best.error) best = fit;
      }
    }
  }
  BlockQ2_0 block{};
  block.d = fp32_to_fp16(best.error < INFINITY ? best.d : 0.0f);
  const float inverse = best.error < INFINITY ? 1.0f / best.d : 0.0f;
  for (int j = 0; j < kBlock; ++j) {
    const int c = inverse != 0.0f ? nearest_quant(x[j], inverse) + 1 : 1;
    block.qs[j % 16] = uint8_t(block.qs[j % 16] | c << (2 * (j / 16)));
  }
  return block;
}

}  // namespace

void dequantize_row_q2_0(const void* blocks, float* out, int64_t n) {
  for (int64_t b = 0; b < n / kBlock; ++b) {
    const auto block = block32::load<BlockQ2_0>(blocks, b);
    const float d = fp16_to_fp32(block.d);
    for (int j = 0; j < kBlock; ++j) out[b * kBlock + j] = float(code(block, j) - 1) * d;
  }
}

void quantize_row_q2_0(const float* in, void* blocks, int64_t n) {
  for (int64_t b = 0; b < n / kBlock; ++b)
    block32::store(blocks, b, quantize_block(in + b * kBlock, kEqualImportance.data()));
}

void quantize_row_q2_0_weighted(const float* in, const float* importance, void* blocks, int64_t n) {
  for (int64_t b = 0; b < n / kBlock; ++b) {
    const float* w = importance + b * kBlock;
    // A block whose inputs all carry zero importance has nothing to weigh: treat them alike.
    const bool any = std::any_of(w, w + kBlock, [](float v) { return v > 0.0f; });
    if (any) {
      block32::store(blocks, b, quantize_block(in + b * kBlock, w));
    } else {
      quantize_row_q2_0(in + b * kBlock, static_cast<uint8_t*>(blocks) + b * sizeof(BlockQ2_0),
                        kBlock);
    }
  }
}

// Per half block, as the other formats per block: the integer sum of code products, times
// d_w * d_x, added in order.
void vec_dot_q2_0_scalar(int64_t n, const void* w, const void* x, size_t x_stride, int n_cols,
                         float* out) {
  for (int c = 0; c < n_cols; ++c) {
    const auto* column = static_cast<const uint8_t*>(x) + size_t(c) * x_stride;
    float sum = 0.0f;
    for (int64_t b = 0; b < n / kBlock; ++b) {
      const auto wb = block32::load<BlockQ2_0>(w, b);
      for (int half = 0; half < 2; ++half) {
        const auto xb = block32::load<BlockQ8_0>(column, 2 * b + half);
        int dot = 0;
        for (int j = 0; j < 32; ++j) dot += (code(wb, 32 * half + j) - 1) * int(xb.qs[j]);
        sum += float(dot) * (fp16_to_fp32(wb.d) * fp16_to_fp32(xb.d));
      }
    }
    out[c] = sum;
  }
}

}  // namespace strata
