// Q8_K, super-block of 256 (292 bytes):
//   bytes 0-3      d          float32 scale (not fp16: the product with a weight scale keeps
//                             all its bits)
//   bytes 4-259    qs[256]    int8 quants, value j = qs[j] * d
//   bytes 260-291  bsums[16]  int16 sums of qs[16g .. 16g + 15], so that dot products get the
//                             sum of activations under a sub-block without touching them
// Only activations are stored this way; every k-quant and IQ4_XS dot product takes it.
#include "quant/q8_k.h"

#include "quant/k_quant_common.h"

#include <algorithm>

namespace strata {

using kquant::kSuperBlock;

void dequantize_row_q8_k(const void* blocks, float* out, int64_t n) {
  for (int64_t b = 0; b < n / kSuperBlock; ++b) {
    const auto block = kquant::load<BlockQ8_K>(blocks, b);
    for (int j = 0; j < kSuperBlock; ++j) out[b * kSuperBlock + j] = block.d * block.qs[j];
  }
}

// llama.cpp's quantize_row_q8_K, which on x86 is its scalar quantize_row_q8_K_ref: the element
// of largest magnitude (the first one on ties) sets iscale = -127 / element, so it becomes -127
// and the others land in [-127, 127]; values round half to even and d = 1 / iscale. An all-zero
// block gets d = 0 and zero quants (ggml leaves its bsums unwritten; here they are zero too).
void quantize_row_q8_k(const float* in, void* blocks, int64_t n) {
  for (int64_t b = 0; b < n / kSuperBlock; ++b) {
    const float* x = in + b * kSuperBlock;
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < kSuperBlock; ++j) {
      if (std::fabs(x[j]) > amax) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    }
    BlockQ8_K block = {};
    if (amax != 0.0f) {
      const float iscale = -127.0f / max;
      for (int j = 0; j < kSuperBlock; ++j)
        block.qs[j] = int8_t(std::min(127, kquant::nearest_int(iscale * x[j])));
      for (int g = 0; g < 16; ++g) {
        int sum = 0;
        for (int j = 0; j < 16; ++j) sum += block.qs[16 * g + j];
        block.bsums[g] = int16_t(sum);
      }
      block.d = 1 / iscale;
    }
    kquant::store(blocks, b, block);
  }
}

}  // namespace strata
