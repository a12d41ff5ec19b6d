#include "quant/q8_k.h"

#include "quant/k_quant_common.h"
#include "quant/k_quant_test_util.h"

#include <gtest/gtest.h>

#include <array>
#include <cfenv>

namespace strata {
namespace {

using namespace kquant_test;

using Quantizer = void (*)(const float*, void*, int64_t);

// The reference, and the AVX2 version where the CPU has it.
std::vector<Quantizer> quantizers() {
  std::vector<Quantizer> all = {kquant::quantize_q8_k_scalar};
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    all.push_back(kquant::quantize_q8_k_avx2);
  return all;
}

BlockQ8_K quantize(Quantizer quantizer, const std::array<float, 256>& x) {
  BlockQ8_K block;
  quantizer(x.data(), &block, 256);
  return block;
}

// With 127 as the largest magnitude, iscale = -127 / 127 = -1 exactly, so every quant is
// -round(x) with nothing but the rounding rule in between: halves go to the even neighbour
// (ggml's nearest_int), not away from zero.
TEST(Q8K, RoundsHalvesToEven) {
  std::array<float, 256> x = {};
  x[0] = 127.0f;
  const float halves[] = {0.5f, 1.5f, 2.5f, 3.5f, -0.5f, -1.5f, -2.5f, 126.5f};
  const int expected[] = {0, -2, -2, -4, 0, 2, 2, -126};
  for (int k = 0; k < 8; ++k) x[size_t(1 + k)] = halves[k];
  for (Quantizer quantizer : quantizers()) {
    const BlockQ8_K block = quantize(quantizer, x);
    EXPECT_EQ(block.d, -1.0f);
    EXPECT_EQ(block.qs[0], -127);
    for (int k = 0; k < 8; ++k) EXPECT_EQ(block.qs[1 + k], expected[k]) << halves[k];
  }
}

// The first element of largest magnitude picks the sign: here -3 comes first, so it maps to -127
// and the later +3 to +127 (the other order maps +3 to -127, and d changes sign).
TEST(Q8K, FirstLargestMagnitudeSetsTheScale) {
  std::array<float, 256> x = {};
  for (Quantizer quantizer : quantizers()) {
    x[5] = -3.0f;
    x[9] = 3.0f;
    const BlockQ8_K block = quantize(quantizer, x);
    EXPECT_EQ(block.qs[5], -127);
    EXPECT_EQ(block.qs[9], 127);
    EXPECT_EQ(block.d, 1 / (-127.0f / -3.0f));
    x[5] = 3.0f;
    x[9] = -3.0f;
    EXPECT_EQ(quantize(quantizer, x).d, 1 / (-127.0f / 3.0f));
  }
}

// Random rows through the reference (Avx2WritesTheScalarBytes carries this to the AVX2 version):
// each quant is iscale * x rounded here by nearbyint (round-to-nearest-even), bsums are the sums
// of 16 quants, dequantized values exactly d * q.
TEST(Q8K, RandomRowsAgainstAnIndependentRounding) {
  ASSERT_EQ(std::fegetround(), FE_TONEAREST);
  std::mt19937 rng(47);
  const auto x = random_activations(256 * 16, rng);
  std::vector<BlockQ8_K> blocks(16);
  kquant::quantize_q8_k_scalar(x.data(), blocks.data(), 256 * 16);
  std::vector<float> out(x.size());
  dequantize_row_q8_k(blocks.data(), out.data(), int64_t(x.size()));
  for (int b = 0; b < 16; ++b) {
    const BlockQ8_K& block = blocks[size_t(b)];
    float amax = 0, max = 0;
    for (int j = 0; j < 256; ++j) {
      if (std::fabs(x[size_t(256 * b + j)]) > amax) {
        amax = std::fabs(x[size_t(256 * b + j)]);
        max = x[size_t(256 * b + j)];
      }
    }
    const float iscale = -127.0f / max;
    for (int j = 0; j < 256; ++j) {
      const float scaled = iscale * x[size_t(256 * b + j)];
      ASSERT_EQ(block.qs[j], int(std::nearbyint(scaled))) << b << " " << j;
      ASSERT_EQ(float_bits(out[size_t(256 * b + j)]), float_bits(block.d * float(block.qs[j])));
    }
    for (int g = 0; g < 16; ++g) {
      int sum = 0;
      for (int j = 0; j < 16; ++j) sum += block.qs[16 * g + j];
      ASSERT_EQ(block.bsums[g], sum) << b << " " << g;
    }
    EXPECT_EQ(block.d, 1 / iscale);
  }
}

// quantize_row_q8_k runs the AVX2 version where it can; it must write the reference's bytes.
// Rows: random magnitudes, exact halves (ties), repeated largest magnitudes of both signs, zero
// and single-value blocks.
TEST(Q8K, Avx2WritesTheScalarBytes) {
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma"))
    GTEST_SKIP() << "CPU lacks AVX2/FMA; AVX2 quantizer not run";
  std::mt19937 rng(48);
  std::vector<float> x = random_activations(256 * 64, rng);
  for (int j = 0; j < 256; ++j) x[size_t(256 + j)] = float(int(rng() % 255) - 127) + 0.5f;
  for (int j = 0; j < 256; ++j) x[size_t(512 + j)] = j % 3 == 0 ? -7.0f : j % 3 == 1 ? 7.0f : 1.0f;
  for (int j = 0; j < 256; ++j) x[size_t(768 + j)] = 0.0f;
  x[1024 + 255] = -1e-30f;
  for (int j = 0; j < 256; ++j) x[size_t(1280 + j)] = j == 200 ? 3e30f : -2.0f;
  std::vector<BlockQ8_K> scalar(64), avx2(64);
  kquant::quantize_q8_k_scalar(x.data(), scalar.data(), int64_t(x.size()));
  kquant::quantize_q8_k_avx2(x.data(), avx2.data(), int64_t(x.size()));
  for (int b = 0; b < 64; ++b)
    ASSERT_EQ(std::memcmp(&scalar[size_t(b)], &avx2[size_t(b)], sizeof(BlockQ8_K)), 0) << b;
}

TEST(Q8K, AllZeroBlockHasZeroScaleQuantsAndSums) {
  std::array<float, 256> x = {};
  for (Quantizer quantizer : quantizers()) {
    const BlockQ8_K block = quantize(quantizer, x);
    EXPECT_EQ(block.d, 0.0f);
    for (int8_t q : block.qs) EXPECT_EQ(q, 0);
    for (int16_t s : block.bsums) EXPECT_EQ(s, 0);
  }
}

}  // namespace
}  // namespace strata
