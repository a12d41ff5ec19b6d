// Q4_0, block of 32 (18 bytes):
//   bytes 0-1   d       fp16 scale
//   bytes 2-17  qs[16]  weight j < 16 in the low nibble of qs[j], weight j + 16 in the high one
// weight j = (nibble - 8) * d. Dot products pair it with Q8_0 activations.
#include "quant/q4_0.h"

#include "quant/block32.h"
#include "quant/q8_0.h"

#include <cmath>

namespace strata {
namespace {

int quant(const BlockQ4_0& block, int j) {
  const int nibble = j < 16 ? block.qs[j] & 0x0f : block.qs[j - 16] >> 4;
  return nibble - 8;
}

}  // namespace

void dequantize_row_q4_0(const void* blocks, float* out, int64_t n) {
  for (int64_t b = 0; b < n / block32::kBlockSize; ++b) {
    const auto block = block32::load<BlockQ4_0>(blocks, b);
    const float d = fp16_to_fp32(block.d);
    for (int j = 0; j < 32; ++j) out[b * 32 + j] = float(quant(block, j)) * d;
  }
}

// ggml's quantize_row_q4_0_ref (what llama-quantize writes without an importance matrix): d is
// the signed value of largest magnitude divided by -8, so that value lands exactly on quant 0
// (-8 * d) and the other side gets the 7 remaining steps; x / d + 8.5 is truncated.
void quantize_row_q4_0(const float* in, void* blocks, int64_t n) {
  for (int64_t b = 0; b < n / block32::kBlockSize; ++b) {
    const float* x = in + b * 32;
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < 32; ++j) {
      if (amax < std::fabs(x[j])) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    }
    const float d = max / -8.0f;
    const float inverse = d != 0.0f ? 1.0f / d : 0.0f;
    BlockQ4_0 block;
    block.d = fp32_to_fp16(d);
    for (int j = 0; j < 16; ++j) {
      const int low = std::min(15, int(x[j] * inverse + 8.5f));
      const int high = std::min(15, int(x[j + 16] * inverse + 8.5f));
      block.qs[j] = uint8_t(low | high << 4);
    }
    block32::store(blocks, b, block);
  }
}

void vec_dot_q4_0_scalar(int64_t n, const void* w, const void* x, size_t x_stride, int n_cols,
                         float* out) {
  block32::scalar_vec_dot<BlockQ4_0, BlockQ8_0>(
      n, w, x, x_stride, n_cols, out, [](const BlockQ4_0& wb, const BlockQ8_0& xb) {
        int sum = 0;
        for (int j = 0; j < 32; ++j) sum += quant(wb, j) * int(xb.qs[j]);
        return float(sum) * fp16_to_fp32(wb.d) * fp16_to_fp32(xb.d);
      });
}

}  // namespace strata
