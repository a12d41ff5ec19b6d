// AVX2 dot products of F32 rows with F32 activations.
#include "cpu/kernels/simd_kernels.h"

#include "cpu/kernels/dense_avx2.h"
#include "quant/f32.h"

namespace strata {
namespace {

struct F32Loader {
  static constexpr int64_t kBytes = 4;
  static __m256 load8(const uint8_t* p) {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(p));
  }
};

}  // namespace

void vec_dot_f32_avx2(int64_t n, const void* w, const void* x, size_t x_stride, int n_cols,
                      float* out) {
  dense_avx2::vec_dot<F32Loader>(n, w, x, x_stride, n_cols, out);
}

}  // namespace strata
