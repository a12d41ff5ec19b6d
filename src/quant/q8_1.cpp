// Q8_1, block of 32 (36 bytes), an activation format only:
//   bytes 0-1   d       fp16 scale
//   bytes 2-3   s       fp16 of d * sum(qs), with d unrounded; lets Q4_1/Q5_1 dot products add
//                       their per-block minimum times the activation sum without a second pass
//   bytes 4-35  qs[32]  int8 quants; value j = qs[j] * d
#include "quant/q8_1.h"

#include "quant/block32.h"

namespace strata {

void dequantize_row_q8_1(const void* blocks, float* out, int64_t n) {
  for (int64_t b = 0; b < n / block32::kBlockSize; ++b) {
    const auto block = block32::load<BlockQ8_1>(blocks, b);
    const float d = fp16_to_fp32(block.d);
    for (int j = 0; j < 32; ++j) out[b * 32 + j] = float(block.qs[j]) * d;
  }
}

// llama.cpp's x86 AVX2 quantize_row_q8_1 (see block32::quantize_activations for how it differs
// from the scalar reference); s comes from the integer sum of the quants, as there.
void quantize_row_q8_1(const float* in, void* blocks, int64_t n) {
  for (int64_t b = 0; b < n / block32::kBlockSize; ++b) {
    BlockQ8_1 block;
    const block32::ActivationBlock quantized = block32::quantize_activations(in + b * 32, block.qs);
    block.d = fp32_to_fp16(quantized.d);
    block.s = fp32_to_fp16(quantized.d * float(quantized.sum));
    block32::store(blocks, b, block);
  }
}

}  // namespace strata
