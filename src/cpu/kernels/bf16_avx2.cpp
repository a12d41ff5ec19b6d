// AVX2 dot products of BF16 rows with BF16 activations: a bfloat16 widened by 16 zero bits is
// its float, so conversion is a zero-extension and a shift.
#include "cpu/kernels/simd_kernels.h"

#include "cpu/kernels/dense_avx2.h"
#include "quant/bf16.h"

namespace strata {
namespace {

struct BF16Loader {
  static constexpr int64_t kBytes = 2;
  static __m256 load8(const uint8_t* p) {
    const __m128i halves = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(halves), 16));
  }
};

}  // namespace

void vec_dot_bf16_avx2(int64_t n, const void* w, const void* x, size_t x_stride, int n_cols,
                       float* out) {
  dense_avx2::vec_dot<BF16Loader>(n, w, x, x_stride, n_cols, out);
}

}  // namespace strata
