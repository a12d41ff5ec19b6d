// AVX2 dot products of Q4_1 rows with Q8_1 activations: the nibbles are the unsigned quants, and
// the minimum times the activations' s field is added per block (block32_avx2.h, MinimumQuants).
#include "cpu/kernels/simd_kernels.h"

#include "cpu/kernels/block32_avx2.h"
#include "quant/q4_1.h"
#include "quant/q8_1.h"

#include <cstddef>

namespace strata {
namespace {

namespace avx2 = block32_avx2;

struct Format {
  using Block = BlockQ4_1;
  using ActivationBlock = BlockQ8_1;
  static constexpr int kChains = 2;  // compute-bound: hide the FMA latency (block32_avx2.h)

  static avx2::MinimumQuants decode(const float* table, const uint8_t* block) {
    return {avx2::unpack_nibbles(block + offsetof(Block, qs)),
            avx2::broadcast_half(table, block + offsetof(Block, d)),
            table[avx2::load_u16(block + offsetof(Block, m))]};
  }
};

}  // namespace

void vec_dot_q4_1_avx2(int64_t n, const void* w, const void* x, size_t x_stride, int n_cols,
                       float* out) {
  avx2::vec_dot<Format>(n, w, x, x_stride, n_cols, out);
}

void vec_dot_rows_q4_1_avx2(int64_t n, const void* w, size_t w_stride, int n_rows, const void* x,
                            float* out) {
  avx2::vec_dot_rows<Format>(n, w, w_stride, n_rows, x, out);
}

}  // namespace strata
