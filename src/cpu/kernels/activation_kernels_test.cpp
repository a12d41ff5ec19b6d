// The AVX2 activation quantizers write the bytes of the reference quantizers (quant/), which
// quant/'s tests hold to llama.cpp's instructions, F16C and ggml's rounding: on rows with every
// magnitude, ties, infinities, subnormals and zero blocks.
#include "cpu/kernels/kernel_test_support.h"
#include "cpu/kernels/simd_kernels.h"
#include "quant/f16.h"
#include "quant/k_quant_test_util.h"
#include "quant/legacy_test_util.h"
#include "quant/q8_0.h"
#include "quant/q8_1.h"
#include "quant/q8_k.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace strata {
namespace {

// Both quantizers on x, block by block (block_size values in block_bytes): the first block
// that differs fails the test.
void expect_same_blocks(QuantizeRowFn kernel, QuantizeRowFn reference, const std::vector<float>& x,
                        int64_t block_size, size_t block_bytes) {
  const size_t n_blocks = x.size() / size_t(block_size);
  std::vector<uint8_t> got(n_blocks * block_bytes), want(n_blocks * block_bytes);
  kernel(x.data(), got.data(), int64_t(x.size()));
  reference(x.data(), want.data(), int64_t(x.size()));
  for (size_t b = 0; b < n_blocks; ++b)
    ASSERT_EQ(std::memcmp(got.data() + b * block_bytes, want.data() + b * block_bytes, block_bytes),
              0)
        << "block " << b << " of " << n_blocks;
}

TEST(ActivationKernels, Q8_0AndQ8_1Avx2WriteTheReferenceBytes) {
  if (!cpu_runs_avx2_kernels()) GTEST_SKIP() << "CPU lacks AVX2/FMA/F16C/BMI2";
  std::mt19937 rng(23);
  const auto x = legacy_test::activation_test_row(rng);
  expect_same_blocks(quantize_row_q8_0_avx2, quantize_row_q8_0, x, 32, sizeof(BlockQ8_0));
  expect_same_blocks(quantize_row_q8_1_avx2, quantize_row_q8_1, x, 32, sizeof(BlockQ8_1));
}

// Every length up to 40 (the AVX2 converter's tail) and a long row of random bit patterns.
TEST(ActivationKernels, F16Avx2WritesTheReferenceBytes) {
  if (!cpu_runs_avx2_kernels()) GTEST_SKIP() << "CPU lacks AVX2/FMA/F16C/BMI2";
  std::mt19937 rng(24);
  std::vector<float> x(100000);
  for (auto& v : x) {
    v = std::bit_cast<float>(uint32_t(rng()));
    if (std::isnan(v)) v = 1.0f;  // NaN payloads are all the two may differ in
  }
  for (int64_t n : {1, 7, 8, 9, 15, 16, 17, 31, 40, 100000}) {
    SCOPED_TRACE("n=" + std::to_string(n));
    expect_same_blocks(quantize_row_f16_avx2, quantize_row_f16, {x.begin(), x.begin() + n}, 1, 2);
  }
}

// Rows: random magnitudes; exact halves (ties) against a largest magnitude of 127; repeated
// largest magnitudes of both signs in either order; zero blocks and single-value ones.
TEST(ActivationKernels, Q8_KAvx2WritesTheReferenceBytes) {
  if (!cpu_runs_avx2_kernels()) GTEST_SKIP() << "CPU lacks AVX2/FMA/F16C/BMI2";
  std::mt19937 rng(48);
  std::vector<float> x = kquant_test::random_activations(256 * 64, rng);
  for (int j = 0; j < 256; ++j) x[size_t(256 + j)] = float(int(rng() % 255) - 127) + 0.5f;
  for (int j = 0; j < 256; ++j) x[size_t(512 + j)] = j % 3 == 0 ? -7.0f : j % 3 == 1 ? 7.0f : 1.0f;
  for (int j = 0; j < 256; ++j) x[size_t(768 + j)] = 0.0f;
  x[1024 + 255] = -1e-30f;
  for (int j = 0; j < 256; ++j) x[size_t(1280 + j)] = j == 200 ? 3e30f : -2.0f;
  float* halves = x.data() + 256 * 6;
  std::fill(halves, halves + 256, 0.0f);
  halves[0] = 127.0f;
  const float ties[] = {0.5f, 1.5f, 2.5f, 3.5f, -0.5f, -1.5f, -2.5f, 126.5f};
  std::copy(std::begin(ties), std::end(ties), halves + 1);
  for (int order = 0; order < 2; ++order) {
    float* block = x.data() + 256 * (7 + order);
    std::fill(block, block + 256, 0.0f);
    block[5] = order == 0 ? -3.0f : 3.0f;
    block[9] = -block[5];
  }
  expect_same_blocks(quantize_row_q8_k_avx2, quantize_row_q8_k, x, 256, sizeof(BlockQ8_K));
}

}  // namespace
}  // namespace strata
