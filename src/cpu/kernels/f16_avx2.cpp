// AVX2 dot products of F16 rows with F16 activations: F16C converts, FMA accumulates in float.
#include "cpu/kernels/simd_kernels.h"

#include "cpu/kernels/dense_avx2.h"
#include "quant/f16.h"

namespace strata {
namespace {

struct F16Loader {
  static constexpr int64_t kBytes = 2;
  static __m256 load8(const uint8_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
};

}  // namespace

void vec_dot_f16_avx2(int64_t n, const void* w, const void* x, size_t x_stride, int n_cols,
                      float* out) {
  dense_avx2::vec_dot<F16Loader>(n, w, x, x_stride, n_cols, out);
}

// F16C's conversion, 8 at a time, as ggml's x86 build converts activations. It equals
// fp32_to_fp16 (round to nearest even) except in the payload of NaNs.
void quantize_row_f16_avx2(const float* in, void* halves, int64_t n) {
  auto* out = static_cast<uint8_t*>(halves);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i converted = _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i * 2), converted);
  }
  for (; i < n; ++i) {
    const uint16_t h = uint16_t(_cvtss_sh(in[i], _MM_FROUND_TO_NEAREST_INT));
    std::memcpy(out + i * 2, &h, 2);
  }
}

}  // namespace strata
