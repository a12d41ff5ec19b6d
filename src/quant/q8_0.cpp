// Q8_0, block of 32 (34 bytes):
//   bytes 0-1   d       fp16 scale
//   bytes 2-33  qs[32]  int8 quants; weight j = qs[j] * d
#include "quant/q8_0.h"

#include "quant/block32.h"

namespace strata {

void dequantize_row_q8_0(const void* blocks, float* out, int64_t n) {
  for (int64_t b = 0; b < n / block32::kBlockSize; ++b) {
    const auto block = block32::load<BlockQ8_0>(blocks, b);
    const float d = fp16_to_fp32(block.d);
    for (int j = 0; j < 32; ++j) out[b * 32 + j] = float(block.qs[j]) * d;
  }
}

// Follows llama.cpp's x86 AVX2 activation quantizer (block32::quantize_activations), because
// Q8_0 rows are mostly activations here. For weight tensors llama-quantize uses the scalar
// reference instead, which rounds ties away from zero and multiplies by 1 / d; the two pick a
// different quant only where x / d lies within an ulp or two of a half-integer (10 of 4.3
// million quants of the golden Q8_0 models, legacy_golden_test.cpp).
void quantize_row_q8_0(const float* in, void* blocks, int64_t n) {
  for (int64_t b = 0; b < n / block32::kBlockSize; ++b) {
    BlockQ8_0 block;
    block.d = fp32_to_fp16(block32::quantize_activations(in + b * 32, block.qs).d);
    block32::store(blocks, b, block);
  }
}

void vec_dot_q8_0_scalar(int64_t n, const void* w, const void* x, size_t x_stride, int n_cols,
                         float* out) {
  block32::scalar_vec_dot<BlockQ8_0, BlockQ8_0>(
      n, w, x, x_stride, n_cols, out, [](const BlockQ8_0& wb, const BlockQ8_0& xb) {
        int sum = 0;
        for (int j = 0; j < 32; ++j) sum += int(wb.qs[j]) * int(xb.qs[j]);
        return float(sum) * fp16_to_fp32(wb.d) * fp16_to_fp32(xb.d);
      });
}

}  // namespace strata
