// The reference Q8_K quantizer: rounding, the element that sets the scale, bsums and zero
// blocks. (The AVX2 version's bytes are checked against it in cpu/kernels/.)
#include "quant/q8_k.h"

#include "quant/k_quant_test_util.h"

#include <gtest/gtest.h>

#include <array>
#include <cfenv>

namespace strata {
namespace {

using namespace kquant_test;

BlockQ8_K quantize(const std::array<float, 256>& x) {
  BlockQ8_K block;
  quantize_row_q8_k(x.data(), &block, 256);
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
  const BlockQ8_K block = quantize(x);
  EXPECT_EQ(block.d, -1.0f);
  EXPECT_EQ(block.qs[0], -127);
  for (int k = 0; k < 8; ++k) EXPECT_EQ(block.qs[1 + k], expected[k]) << halves[k];
}

// The first element of largest magnitude picks the sign: here -3 comes first, so it maps to -127
// and the later +3 to +127 (the other order maps +3 to -127, and d changes sign).
TEST(Q8K, FirstLargestMagnitudeSetsTheScale) {
  std::array<float, 256> x = {};
  x[5] = -3.0f;
  x[9] = 3.0f;
  const BlockQ8_K block = quantize(x);
  EXPECT_EQ(block.qs[5], -127);
  EXPECT_EQ(block.qs[9], 127);
  EXPECT_EQ(block.d, 1 / (-127.0f / -3.0f));
  x[5] = 3.0f;
  x[9] = -3.0f;
  EXPECT_EQ(quantize(x).d, 1 / (-127.0f / 3.0f));
}

// Random rows through the reference (cpu/kernels/activation_kernels_test.cpp carries this to the
// AVX2 version):
// each quant is iscale * x rounded here by nearbyint (round-to-nearest-even), bsums are the sums
// of 16 quants, dequantized values exactly d * q.
TEST(Q8K, RandomRowsAgainstAnIndependentRounding) {
  ASSERT_EQ(std::fegetround(), FE_TONEAREST);
  std::mt19937 rng(47);
  const auto x = random_activations(256 * 16, rng);
  std::vector<BlockQ8_K> blocks(16);
  quantize_row_q8_k(x.data(), blocks.data(), 256 * 16);
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

TEST(Q8K, AllZeroBlockHasZeroScaleQuantsAndSums) {
  const BlockQ8_K block = quantize({});
  EXPECT_EQ(block.d, 0.0f);
  for (int8_t q : block.qs) EXPECT_EQ(q, 0);
  for (int16_t s : block.bsums) EXPECT_EQ(s, 0);
}

}  // namespace
}  // namespace strata
