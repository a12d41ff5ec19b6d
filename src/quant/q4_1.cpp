// Q4_1, block of 32 (20 bytes):
//   bytes 0-1   d       fp16 scale
//   bytes 2-3   m       fp16 minimum
//   bytes 4-19  qs[16]  weight j < 16 in the low nibble of qs[j], weight j + 16 in the high one
// weight j = nibble * d + m. Dot products pair it with Q8_1 activations, whose s field carries
// the activation sum that the minimum multiplies.
#include "quant/q4_1.h"

#include "quant/block32.h"
#include "quant/q8_1.h"

#include <cfloat>

namespace strata {
namespace {

int quant(const BlockQ4_1& block, int j) {
  return j < 16 ? block.qs[j] & 0x0f : block.qs[j - 16] >> 4;
}

}  // namespace

void dequantize_row_q4_1(const void* blocks, float* out, int64_t n) {
  for (int64_t b = 0; b < n / block32::kBlockSize; ++b) {
    const auto block = block32::load<BlockQ4_1>(blocks, b);
    const float d = fp16_to_fp32(block.d), m = fp16_to_fp32(block.m);
    for (int j = 0; j < 32; ++j) out[b * 32 + j] = float(quant(block, j)) * d + m;
  }
}

// ggml's quantize_row_q4_1_ref: the block's range [min, max] in 15 steps, (x - min) / d + 0.5
// truncated.
void quantize_row_q4_1(const float* in, void* blocks, int64_t n) {
  for (int64_t b = 0; b < n / block32::kBlockSize; ++b) {
    const float* x = in + b * 32;
    float min = FLT_MAX, max = -FLT_MAX;
    for (int j = 0; j < 32; ++j) {
      min = std::min(min, x[j]);
      max = std::max(max, x[j]);
    }
    const float d = (max - min) / 15.0f;
    const float inverse = d != 0.0f ? 1.0f / d : 0.0f;
    BlockQ4_1 block;
    block.d = fp32_to_fp16(d);
    block.m = fp32_to_fp16(min);
    for (int j = 0; j < 16; ++j) {
      const int low = std::min(15, int((x[j] - min) * inverse + 0.5f));
      const int high = std::min(15, int((x[j + 16] - min) * inverse + 0.5f));
      block.qs[j] = uint8_t(low | high << 4);
    }
    block32::store(blocks, b, block);
  }
}

void vec_dot_q4_1_scalar(int64_t n, const void* w, const void* x, size_t x_stride, int n_cols,
                         float* out) {
  block32::scalar_vec_dot<BlockQ4_1, BlockQ8_1>(
      n, w, x, x_stride, n_cols, out, [](const BlockQ4_1& wb, const BlockQ8_1& xb) {
        int sum = 0;
        for (int j = 0; j < 32; ++j) sum += quant(wb, j) * int(xb.qs[j]);
        return float(sum) * fp16_to_fp32(wb.d) * fp16_to_fp32(xb.d) +
               fp16_to_fp32(wb.m) * fp16_to_fp32(xb.s);
      });
}

}  // namespace strata
