// Q5_1, block of 32 (24 bytes):
//   bytes 0-1   d       fp16 scale
//   bytes 2-3   m       fp16 minimum
//   bytes 4-7   qh      little-endian uint32; bit j is bit 4 of weight j's quant
//   bytes 8-23  qs[16]  bits 0-3: weight j < 16 in the low nibble of qs[j], j + 16 in the high
// weight j = quant * d + m. Dot products pair it with Q8_1 activations (see q4_1.cpp).
#include "quant/q5_1.h"

#include "quant/block32.h"
#include "quant/q8_1.h"

#include <cfloat>

namespace strata {
namespace {

int quant(const BlockQ5_1& block, int j) {
  const uint32_t high_bits = uint32_t(block.qh[0]) | uint32_t(block.qh[1]) << 8 |
                             uint32_t(block.qh[2]) << 16 | uint32_t(block.qh[3]) << 24;
  const int nibble = j < 16 ? block.qs[j] & 0x0f : block.qs[j - 16] >> 4;
  return nibble | int((high_bits >> j) & 1) << 4;
}

}  // namespace

void dequantize_row_q5_1(const void* blocks, float* out, int64_t n) {
  for (int64_t b = 0; b < n / block32::kBlockSize; ++b) {
    const auto block = block32::load<BlockQ5_1>(blocks, b);
    const float d = fp16_to_fp32(block.d), m = fp16_to_fp32(block.m);
    for (int j = 0; j < 32; ++j) out[b * 32 + j] = float(quant(block, j)) * d + m;
  }
}

// ggml's quantize_row_q5_1_ref: the range [min, max] in 31 steps, (x - min) / d + 0.5 truncated.
// ggml does not clamp to 31; (max - min) / d stays below 31.5, so the clamp here never acts.
void quantize_row_q5_1(const float* in, void* blocks, int64_t n) {
  for (int64_t b = 0; b < n / block32::kBlockSize; ++b) {
    const float* x = in + b * 32;
    float min = FLT_MAX, max = -FLT_MAX;
    for (int j = 0; j < 32; ++j) {
      min = std::min(min, x[j]);
      max = std::max(max, x[j]);
    }
    const float d = (max - min) / 31.0f;
    const float inverse = d != 0.0f ? 1.0f / d : 0.0f;
    BlockQ5_1 block;
    block.d = fp32_to_fp16(d);
    block.m = fp32_to_fp16(min);
    uint32_t high_bits = 0;
    for (int j = 0; j < 16; ++j) {
      const int low = std::min(31, int((x[j] - min) * inverse + 0.5f));
      const int high = std::min(31, int((x[j + 16] - min) * inverse + 0.5f));
      block.qs[j] = uint8_t((low & 0x0f) | (high & 0x0f) << 4);
      high_bits |= uint32_t(low >> 4) << j | uint32_t(high >> 4) << (j + 16);
    }
    for (int i = 0; i < 4; ++i) block.qh[i] = uint8_t(high_bits >> (8 * i));
    block32::store(blocks, b, block);
  }
}

void vec_dot_q5_1_scalar(int64_t n, const void* w, const void* x, size_t x_stride, int n_cols,
                         float* out) {
  block32::scalar_vec_dot<BlockQ5_1, BlockQ8_1>(
      n, w, x, x_stride, n_cols, out, [](const BlockQ5_1& wb, const BlockQ8_1& xb) {
        int sum = 0;
        for (int j = 0; j < 32; ++j) sum += quant(wb, j) * int(xb.qs[j]);
        return float(sum) * fp16_to_fp32(wb.d) * fp16_to_fp32(xb.d) +
               fp16_to_fp32(wb.m) * fp16_to_fp32(xb.s);
      });
}

}  // namespace strata
