// Q5_0, block of 32 (22 bytes):
//   bytes 0-1   d       fp16 scale
//   bytes 2-5   qh      little-endian uint32; bit j is bit 4 of weight j's quant
//   bytes 6-21  qs[16]  bits 0-3: weight j < 16 in the low nibble of qs[j], j + 16 in the high
// weight j = (quant - 16) * d. Dot products pair it with Q8_0 activations.
#include "quant/q5_0.h"

#include "quant/block32.h"
#include "quant/q8_0.h"

#include <cmath>

namespace strata {
namespace {

int quant(const BlockQ5_0& block, int j) {
  const uint32_t high_bits = uint32_t(block.qh[0]) | uint32_t(block.qh[1]) << 8 |
                             uint32_t(block.qh[2]) << 16 | uint32_t(block.qh[3]) << 24;
  const int nibble = j < 16 ? block.qs[j] & 0x0f : block.qs[j - 16] >> 4;
  return (nibble | int((high_bits >> j) & 1) << 4) - 16;
}

}  // namespace

void dequantize_row_q5_0(const void* blocks, float* out, int64_t n) {
  for (int64_t b = 0; b < n / block32::kBlockSize; ++b) {
    const auto block = block32::load<BlockQ5_0>(blocks, b);
    const float d = fp16_to_fp32(block.d);
    for (int j = 0; j < 32; ++j) out[b * 32 + j] = float(quant(block, j)) * d;
  }
}

// ggml's quantize_row_q5_0_ref: as Q4_0 with 32 levels, d = (value of largest magnitude) / -16.
void quantize_row_q5_0(const float* in, void* blocks, int64_t n) {
  for (int64_t b = 0; b < n / block32::kBlockSize; ++b) {
    const float* x = in + b * 32;
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < 32; ++j) {
      if (amax < std::fabs(x[j])) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    }
    const float d = max / -16.0f;
    const float inverse = d != 0.0f ? 1.0f / d : 0.0f;
    BlockQ5_0 block;
    block.d = fp32_to_fp16(d);
    uint32_t high_bits = 0;
    for (int j = 0; j < 16; ++j) {
      const int low = std::min(31, int(x[j] * inverse + 16.5f));
      const int high = std::min(31, int(x[j + 16] * inverse + 16.5f));
      block.qs[j] = uint8_t((low & 0x0f) | (high & 0x0f) << 4);
      high_bits |= uint32_t(low >> 4) << j | uint32_t(high >> 4) << (j + 16);
    }
    for (int i = 0; i < 4; ++i) block.qh[i] = uint8_t(high_bits >> (8 * i));
    block32::store(blocks, b, block);
  }
}

void vec_dot_q5_0_scalar(int64_t n, const void* w, const void* x, size_t x_stride, int n_cols,
                         float* out) {
  block32::scalar_vec_dot<BlockQ5_0, BlockQ8_0>(
      n, w, x, x_stride, n_cols, out, [](const BlockQ5_0& wb, const BlockQ8_0& xb) {
        int sum = 0;
        for (int j = 0; j < 32; ++j) sum += quant(wb, j) * int(xb.qs[j]);
        return float(sum) * fp16_to_fp32(wb.d) * fp16_to_fp32(xb.d);
      });
}

}  // namespace strata
