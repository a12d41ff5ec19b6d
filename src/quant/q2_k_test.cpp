#include "quant/q2_k.h"

#include "quant/k_quant_test_util.h"

#include <gtest/gtest.h>

#include <array>

namespace strata {
namespace {

using namespace kquant_test;

std::array<float, 256> dequantize(const BlockQ2_K& block) {
  std::array<float, 256> out;
  dequantize_row_q2_k(&block, out.data(), 256);
  return out;
}

TEST(Q2K, DequantizeMatchesBitLayoutOnRandomBlocks) {
  std::mt19937 rng(42);
  for (int trial = 0; trial < 2000; ++trial) {
    BlockQ2_K block;
    fill_random_bytes(reinterpret_cast<uint8_t*>(&block), sizeof block, rng);
    block.d = random_finite_half(rng);
    block.dmin = random_finite_half(rng);
    const auto out = dequantize(block);
    for (int i = 0; i < 256; ++i)
      ASSERT_EQ(float_bits(out[i]), float_bits(ref_q2_k(block, i).value)) << trial << " " << i;
  }
}

// Over 16 rounds, sub-block s gets scale code (round + 5s) % 16 and minimum code
// (round + 3s + 7) % 16: every code at every position.
TEST(Q2K, EveryScaleAndMinimumCodeAtEveryPosition) {
  for (int round = 0; round < 16; ++round) {
    BlockQ2_K block = {};
    block.d = fp32_to_fp16(1.0f);
    block.dmin = fp32_to_fp16(0.25f);
    for (int s = 0; s < 16; ++s)
      block.scales[s] = uint8_t((round + 5 * s) % 16 | ((round + 3 * s + 7) % 16) << 4);
    std::memset(block.qs, 0x55, sizeof block.qs);  // every quant = 1
    const auto out = dequantize(block);
    for (int i = 0; i < 256; ++i) {
      const int s = i / 16;
      ASSERT_EQ(out[i], float((round + 5 * s) % 16) - 0.25f * float((round + 3 * s + 7) % 16))
          << round << " " << i;
    }
  }
}

TEST(Q2K, EveryQuantValueAtEveryPosition) {
  for (int round = 0; round < 4; ++round) {
    BlockQ2_K block = {};
    block.d = fp32_to_fp16(1.0f);
    std::memset(block.scales, 1, sizeof block.scales);
    for (int i = 0; i < 256; ++i) {
      const QuantBits bits = q2_k_bits(i);
      set_bits(block.qs, bits.low_first, bits.low_count, (round + i) % 4);
    }
    const auto out = dequantize(block);
    for (int i = 0; i < 256; ++i) ASSERT_EQ(out[i], float((round + i) % 4)) << round << " " << i;
  }
}

// Sub-block s holds levels 0..3 four times with step 1/4 (a power of two: the first fit is
// exact and nothing beats an error of zero) and minimum s/16: scale codes are all 15, minimum
// codes s (15 * (s/16) / (15/16)), dmin = (15/16) / 15 = 1/16, and the levels come back.
TEST(Q2K, QuantizesAnExactlyRepresentableBlockToKnownCodes) {
  std::array<float, 256> x;
  for (int i = 0; i < 256; ++i) x[i] = float(i % 4) / 4.0f - float(i / 16) / 16.0f;
  BlockQ2_K block;
  quantize_row_q2_k(x.data(), &block, 256);
  EXPECT_EQ(block.d, fp32_to_fp16(0.25f / 15.0f));
  EXPECT_EQ(block.dmin, fp32_to_fp16(1.0f / 16.0f));
  for (int s = 0; s < 16; ++s) EXPECT_EQ(block.scales[s], 15 | s << 4) << s;
  for (int i = 0; i < 256; ++i) EXPECT_EQ(quant(block.qs, nullptr, q2_k_bits(i)), i % 4) << i;
}

}  // namespace
}  // namespace strata
