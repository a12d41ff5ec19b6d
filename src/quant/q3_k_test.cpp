#include "quant/q3_k.h"

#include "quant/k_quant_test_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>

namespace strata {
namespace {

using namespace kquant_test;

std::array<float, 256> dequantize(const BlockQ3_K& block) {
  std::array<float, 256> out;
  dequantize_row_q3_k(&block, out.data(), 256);
  return out;
}

void set_quant(BlockQ3_K& block, int i, int q) {  // q in [0, 7]: weight q - 4
  const QuantBits bits = q3_k_bits(i);
  set_bits(block.qs, bits.low_first, bits.low_count, q & 3);
  set_bits(block.hmask, bits.high_first, bits.high_count, q >> 2);
}

TEST(Q3K, DequantizeMatchesBitLayoutOnRandomBlocks) {
  std::mt19937 rng(43);
  for (int trial = 0; trial < 2000; ++trial) {
    BlockQ3_K block;
    fill_random_bytes(reinterpret_cast<uint8_t*>(&block), sizeof block, rng);
    block.d = random_finite_half(rng);
    const auto out = dequantize(block);
    for (int i = 0; i < 256; ++i)
      ASSERT_EQ(float_bits(out[i]), float_bits(ref_q3_k(block, i).value)) << trial << " " << i;
  }
}

// Over 64 rounds, sub-block s gets code (round + 9s) % 64: every 6-bit code at every position.
// The scale is code - 32, so codes below 32 must come out negative.
TEST(Q3K, EveryScaleCodeAtEveryPositionWithItsSignedOffset) {
  for (int round = 0; round < 64; ++round) {
    BlockQ3_K block = {};
    block.d = fp32_to_fp16(1.0f);
    for (int s = 0; s < 16; ++s) set_q3_k_scale_code(block.scales, s, (round + 9 * s) % 64);
    for (int i = 0; i < 256; ++i) set_quant(block, i, 5);  // weight +1
    const auto out = dequantize(block);
    for (int i = 0; i < 256; ++i)
      ASSERT_EQ(out[i], float((round + 9 * (i / 16)) % 64 - 32)) << round << " " << i;
  }
}

// Over 8 rounds, weight i gets stored quant (round + i) % 8, i.e. weight value q - 4: a clear
// third bit means negative.
TEST(Q3K, EveryQuantValueAtEveryPosition) {
  for (int round = 0; round < 8; ++round) {
    BlockQ3_K block = {};
    block.d = fp32_to_fp16(1.0f);
    for (int s = 0; s < 16; ++s) set_q3_k_scale_code(block.scales, s, 33);  // scale +1
    for (int i = 0; i < 256; ++i) set_quant(block, i, (round + i) % 8);
    const auto out = dequantize(block);
    for (int i = 0; i < 256; ++i)
      ASSERT_EQ(out[i], float((round + i) % 8 - 4)) << round << " " << i;
  }
}

// Sub-block s holds (l - 4) * scale_s with l = (i + s) % 8, and scale_s = sign_s * 2^-(3 + s % 4)
// (powers of two, so every fit is exact). The largest fit (+1/8, sub-block 0) sets
// d = -(1/8) / 32 and codes round(-256 * scale_s) + 32; scale -1/8 would need code 64 and is
// clamped to 63.
TEST(Q3K, QuantizesKnownScalesToKnownCodes) {
  std::array<float, 256> x;
  float scale[16];
  for (int s = 0; s < 16; ++s)
    scale[s] = (s == 4 || s % 3 == 1 ? -1.0f : 1.0f) * std::ldexp(1.0f, -(3 + s % 4));
  for (int i = 0; i < 256; ++i) x[i] = float((i + i / 16) % 8 - 4) * scale[i / 16];
  BlockQ3_K block;
  quantize_row_q3_k(x.data(), &block, 256);
  EXPECT_EQ(block.d, fp32_to_fp16(-1.0f / 256.0f));
  const auto out = dequantize(block);
  for (int s = 0; s < 16; ++s) {
    const int expected_code = std::min(31, int(-256.0f * scale[s])) + 32;
    EXPECT_EQ(q3_k_scale_code(block.scales, s), expected_code) << s;
    if (expected_code == 63) continue;  // clamped: levels re-rounded against a smaller scale
    for (int i = 16 * s; i < 16 * s + 16; ++i) {
      EXPECT_EQ(quant(block.qs, block.hmask, q3_k_bits(i)), (i + s) % 8) << i;
      EXPECT_EQ(out[i], x[i]) << i;
    }
  }
}

}  // namespace
}  // namespace strata
