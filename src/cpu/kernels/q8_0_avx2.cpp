// AVX2 dot products of Q8_0 rows with Q8_0 activations: signed bytes against signed bytes
// (block32_avx2.h, SignedQuants).
#include "cpu/kernels/simd_kernels.h"

#include "cpu/kernels/block32_avx2.h"
#include "quant/q8_0.h"

#include <cstddef>
#include <cstring>

namespace strata {
namespace {

namespace avx2 = block32_avx2;

struct Format {
  using Block = BlockQ8_0;
  using ActivationBlock = BlockQ8_0;
  // Memory-bound anyway: llama.cpp's summation order for free (block32_avx2.h).
  static constexpr int kChains = 1;

  static avx2::SignedQuants decode(const float* table, const uint8_t* block) {
    const __m256i quants =
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + offsetof(Block, qs)));
    return avx2::SignedQuants::from(quants,
                                    avx2::broadcast_half(table, block + offsetof(Block, d)));
  }
};

}  // namespace

void vec_dot_q8_0_avx2(int64_t n, const void* w, const void* x, size_t x_stride, int n_cols,
                       float* out) {
  avx2::vec_dot<Format>(n, w, x, x_stride, n_cols, out);
}

void vec_dot_rows_q8_0_avx2(int64_t n, const void* w, size_t w_stride, int n_rows, const void* x,
                            float* out) {
  avx2::vec_dot_rows<Format>(n, w, w_stride, n_rows, x, out);
}

void quantize_row_q8_0_avx2(const float* in, void* blocks, int64_t n) {
  for (int64_t b = 0; b < n / 32; ++b) {
    auto* block = static_cast<uint8_t*>(blocks) + b * int64_t(sizeof(BlockQ8_0));
    const auto quantized = avx2::quantize_activations(
        in + b * 32, reinterpret_cast<int8_t*>(block + offsetof(BlockQ8_0, qs)));
    const uint16_t d = avx2::float_to_half(quantized.d);
    std::memcpy(block + offsetof(BlockQ8_0, d), &d, 2);
  }
}

}  // namespace strata
