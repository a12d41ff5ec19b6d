#include "quant/q5_k.h"

#include "quant/k_quant_test_util.h"

#include <gtest/gtest.h>

#include <array>

namespace strata {
namespace {

using namespace kquant_test;

std::array<float, 256> dequantize(const BlockQ5_K& block) {
  std::array<float, 256> out;
  dequantize_row_q5_k(&block, out.data(), 256);
  return out;
}

void set_quant(BlockQ5_K& block, int i, int q) {
  const QuantBits bits = q5_k_bits(i);
  set_bits(block.qs, bits.low_first, bits.low_count, q & 15);
  set_bits(block.qh, bits.high_first, bits.high_count, q >> 4);
}

TEST(Q5K, DequantizeMatchesBitLayoutOnRandomBlocks) {
  std::mt19937 rng(44);
  for (int trial = 0; trial < 2000; ++trial) {
    BlockQ5_K block;
    fill_random_bytes(reinterpret_cast<uint8_t*>(&block), sizeof block, rng);
    block.d = random_finite_half(rng);
    block.dmin = random_finite_half(rng);
    const auto out = dequantize(block);
    for (int i = 0; i < 256; ++i)
      ASSERT_EQ(float_bits(out[i]), float_bits(ref_q5_k(block, i).value)) << trial << " " << i;
  }
}

// As Q4K.EveryScaleAndMinimumCodeAtEveryPosition (the same packing, decoded by Q5_K's code).
TEST(Q5K, EveryScaleAndMinimumCodeAtEveryPosition) {
  for (int round = 0; round < 64; ++round) {
    BlockQ5_K block = {};
    block.d = fp32_to_fp16(1.0f);
    block.dmin = fp32_to_fp16(0.25f);
    for (int j = 0; j < 8; ++j)
      set_k_codes(block.scales, j, (round + 7 * j) % 64, (round + 13 * j + 5) % 64);
    for (int i = 0; i < 256; ++i) set_quant(block, i, 1);
    const auto out = dequantize(block);
    for (int i = 0; i < 256; ++i) {
      const int j = i / 32;
      ASSERT_EQ(out[i], float((round + 7 * j) % 64) - 0.25f * float((round + 13 * j + 5) % 64))
          << round << " " << i;
    }
  }
}

TEST(Q5K, EveryQuantValueAtEveryPosition) {
  for (int round = 0; round < 32; ++round) {
    BlockQ5_K block = {};
    block.d = fp32_to_fp16(1.0f);
    for (int j = 0; j < 8; ++j) set_k_codes(block.scales, j, 1, 0);
    for (int i = 0; i < 256; ++i) set_quant(block, i, (round + i) % 32);
    const auto out = dequantize(block);
    for (int i = 0; i < 256; ++i) ASSERT_EQ(out[i], float((round + i) % 32)) << round << " " << i;
  }
}

// Every sub-block holds levels 0..31 with step 1/32 (a power of two: the first fit is exact) and
// minimum j/8: scale codes are all 63, minimum codes 9j, and the levels come back unchanged.
TEST(Q5K, QuantizesAnExactlyRepresentableBlockToKnownCodes) {
  std::array<float, 256> x;
  for (int i = 0; i < 256; ++i) x[i] = float(i % 32) / 32.0f - float(i / 32) / 8.0f;
  BlockQ5_K block;
  quantize_row_q5_k(x.data(), &block, 256);
  EXPECT_EQ(block.d, fp32_to_fp16(1.0f / 32.0f / 63.0f));
  EXPECT_EQ(block.dmin, fp32_to_fp16(7.0f / 8.0f / 63.0f));
  for (int j = 0; j < 8; ++j) {
    EXPECT_EQ(k_scale_code(block.scales, j), 63) << j;
    EXPECT_EQ(k_min_code(block.scales, j), 9 * j) << j;
  }
  for (int i = 0; i < 256; ++i) EXPECT_EQ(quant(block.qs, block.qh, q5_k_bits(i)), i % 32) << i;
}

}  // namespace
}  // namespace strata
