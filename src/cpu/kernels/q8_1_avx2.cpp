// AVX2 quantization of activations to Q8_1, writing quantize_row_q8_1's bytes: llama.cpp's
// instructions, with s from the integer sum of the quants.
#include "cpu/kernels/simd_kernels.h"

#include "cpu/kernels/block32_avx2.h"
#include "quant/q8_1.h"

#include <cstddef>
#include <cstring>

namespace strata {

void quantize_row_q8_1_avx2(const float* in, void* blocks, int64_t n) {
  namespace avx2 = block32_avx2;
  for (int64_t b = 0; b < n / 32; ++b) {
    auto* block = static_cast<uint8_t*>(blocks) + b * int64_t(sizeof(BlockQ8_1));
    const auto quantized = avx2::quantize_activations(
        in + b * 32, reinterpret_cast<int8_t*>(block + offsetof(BlockQ8_1, qs)));
    const uint16_t d = avx2::float_to_half(quantized.d);
    const uint16_t s = avx2::float_to_half(quantized.d * float(quantized.sum));
    std::memcpy(block + offsetof(BlockQ8_1, d), &d, 2);
    std::memcpy(block + offsetof(BlockQ8_1, s), &s, 2);
  }
}

}  // namespace strata
