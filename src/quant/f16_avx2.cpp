// AVX2 dot products of F16 rows with F16 activations: F16C converts, FMA accumulates in float.
#include "quant/dense_avx2.h"
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

}  // namespace strata
