#include "quant/q4_k.h"

#include "quant/k_quant_test_util.h"

#include <gtest/gtest.h>

#include <array>

namespace strata {
namespace {

using namespace kquant_test;

std::array<float, 256> dequantize(const BlockQ4_K& block) {
  std::array<float, 256> out;
  dequantize_row_q4_k(&block, out.data(), 256);
  return out;
}

TEST(Q4K, DequantizeMatchesBitLayoutOnRandomBlocks) {
  std::mt19937 rng(41);
  for (int trial = 0; trial < 2000; ++trial) {
    BlockQ4_K block;
    fill_random_bytes(reinterpret_cast<uint8_t*>(&block), sizeof block, rng);
    block.d = random_finite_half(rng);
    block.dmin = random_finite_half(rng);
    const auto out = dequantize(block);
    for (int i = 0; i < 256; ++i)
      ASSERT_EQ(float_bits(out[i]), float_bits(ref_q4_k(block, i).value)) << trial << " " << i;
  }
}

// Over 64 rounds, sub-block j gets scale code (round + 7j) % 64 and minimum code
// (round + 13j + 5) % 64: every code at every position, next to different codes elsewhere.
TEST(Q4K, EveryScaleAndMinimumCodeAtEveryPosition) {
  for (int round = 0; round < 64; ++round) {
    BlockQ4_K block = {};
    block.d = fp32_to_fp16(1.0f);
    block.dmin = fp32_to_fp16(0.25f);
    for (int j = 0; j < 8; ++j)
      set_k_codes(block.scales, j, (round + 7 * j) % 64, (round + 13 * j + 5) % 64);
    std::memset(block.qs, 0x11, sizeof block.qs);  // every quant = 1
    const auto out = dequantize(block);
    for (int i = 0; i < 256; ++i) {
      const int j = i / 32;
      ASSERT_EQ(out[i], float((round + 7 * j) % 64) - 0.25f * float((round + 13 * j + 5) % 64))
          << round << " " << i;
    }
  }
}

TEST(Q4K, EveryQuantValueAtEveryPosition) {
  for (int round = 0; round < 16; ++round) {
    BlockQ4_K block = {};
    block.d = fp32_to_fp16(1.0f);
    for (int j = 0; j < 8; ++j) set_k_codes(block.scales, j, 1, 0);
    for (int i = 0; i < 256; ++i) {
      const QuantBits bits = q4_k_bits(i);
      set_bits(block.qs, bits.low_first, bits.low_count, (round + i) % 16);
    }
    const auto out = dequantize(block);
    for (int i = 0; i < 256; ++i) ASSERT_EQ(out[i], float((round + i) % 16)) << round << " " << i;
  }
}

// Every sub-block holds levels 0..15 twice with step 1/16 (a power of two, so the first fit is
// exact and nothing beats it) and minimum j/8: scale codes are all 63, minimum codes 9j
// (63 * (j/8) / (7/8)), and the levels come back unchanged.
TEST(Q4K, QuantizesAnExactlyRepresentableBlockToKnownCodes) {
  std::array<float, 256> x;
  for (int i = 0; i < 256; ++i) x[i] = float(i % 16) / 16.0f - float(i / 32) / 8.0f;
  BlockQ4_K block;
  quantize_row_q4_k(x.data(), &block, 256);
  EXPECT_EQ(block.d, fp32_to_fp16(1.0f / 16.0f / 63.0f));
  EXPECT_EQ(block.dmin, fp32_to_fp16(7.0f / 8.0f / 63.0f));
  for (int j = 0; j < 8; ++j) {
    EXPECT_EQ(k_scale_code(block.scales, j), 63) << j;
    EXPECT_EQ(k_min_code(block.scales, j), 9 * j) << j;
  }
  for (int i = 0; i < 256; ++i) EXPECT_EQ(quant(block.qs, nullptr, q4_k_bits(i)), i % 16) << i;
}

// Sub-block j spans [-1/2, 15 * (2j + 1) / 16 - 1/2]: its scale code is round(63 * (2j + 1) / 15),
// none of them near a tie, and every minimum is the largest (code 63).
TEST(Q4K, ScaleCodesFollowTheSubBlockRanges) {
  std::array<float, 256> x;
  for (int i = 0; i < 256; ++i) x[i] = float(i % 16) * float(2 * (i / 32) + 1) / 16.0f - 0.5f;
  BlockQ4_K block;
  quantize_row_q4_k(x.data(), &block, 256);
  const int expected[8] = {4, 13, 21, 29, 38, 46, 55, 63};
  for (int j = 0; j < 8; ++j) {
    EXPECT_EQ(k_scale_code(block.scales, j), expected[j]) << j;
    EXPECT_EQ(k_min_code(block.scales, j), 63) << j;
  }
  // Re-rounding against the coded scales keeps every weight within one coded step (not half a
  // step: where a coded scale is smaller than the fit, the top level is clamped at 15).
  const auto out = dequantize(block);
  for (int i = 0; i < 256; ++i) {
    const float step = fp16_to_fp32(block.d) * float(expected[i / 32]);
    EXPECT_LE(std::fabs(out[i] - x[i]), step) << i;
  }
}

}  // namespace
}  // namespace strata
