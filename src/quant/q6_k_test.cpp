#include "quant/q6_k.h"

#include "quant/k_quant_test_util.h"

#include <gtest/gtest.h>

#include <array>

namespace strata {
namespace {

using namespace kquant_test;

std::array<float, 256> dequantize(const BlockQ6_K& block) {
  std::array<float, 256> out;
  dequantize_row_q6_k(&block, out.data(), 256);
  return out;
}

void set_quant(BlockQ6_K& block, int i, int q) {  // q in [0, 63]: weight q - 32
  const QuantBits bits = q6_k_bits(i);
  set_bits(block.ql, bits.low_first, bits.low_count, q & 15);
  set_bits(block.qh, bits.high_first, bits.high_count, q >> 4);
}

TEST(Q6K, DequantizeMatchesBitLayoutOnRandomBlocks) {
  std::mt19937 rng(45);
  for (int trial = 0; trial < 2000; ++trial) {
    BlockQ6_K block;
    fill_random_bytes(reinterpret_cast<uint8_t*>(&block), sizeof block, rng);
    block.d = random_finite_half(rng);
    const auto out = dequantize(block);
    for (int i = 0; i < 256; ++i)
      ASSERT_EQ(float_bits(out[i]), float_bits(ref_q6_k(block, i).value)) << trial << " " << i;
  }
}

// Over 256 rounds, sub-block s gets scale byte (round + 17s) % 256 read as int8: every signed
// 8-bit scale at every position.
TEST(Q6K, EverySignedScaleAtEveryPosition) {
  for (int round = 0; round < 256; ++round) {
    BlockQ6_K block = {};
    block.d = fp32_to_fp16(1.0f);
    for (int s = 0; s < 16; ++s) block.scales[s] = int8_t(uint8_t((round + 17 * s) % 256));
    for (int i = 0; i < 256; ++i) set_quant(block, i, 33);  // weight +1
    const auto out = dequantize(block);
    for (int i = 0; i < 256; ++i) {
      ASSERT_EQ(out[i], float(int8_t(uint8_t((round + 17 * (i / 16)) % 256)))) << round << " " << i;
    }
  }
}

TEST(Q6K, EveryQuantValueAtEveryPosition) {
  for (int round = 0; round < 64; ++round) {
    BlockQ6_K block = {};
    block.d = fp32_to_fp16(1.0f);
    std::memset(block.scales, 1, sizeof block.scales);
    for (int i = 0; i < 256; ++i) set_quant(block, i, (round + i) % 64);
    const auto out = dequantize(block);
    for (int i = 0; i < 256; ++i)
      ASSERT_EQ(out[i], float((round + i) % 64 - 32)) << round << " " << i;
  }
}

// Sub-block s holds (l - 32) * (s + 1) / 64, each with l = 0 (its largest magnitude, -32 steps)
// and 15 other levels. The largest fit, 16/64, sets d = -(1/4) / 128 = -1/512 and scale bytes
// round(-128 * (s + 1) / 16) = -8 (s + 1); d * scale is then exactly the step, so every level and
// value comes back.
TEST(Q6K, QuantizesKnownScalesToKnownCodes) {
  std::array<float, 256> x;
  std::array<int, 256> level;
  for (int i = 0; i < 256; ++i) {
    const int s = i / 16;
    level[i] = i % 16 == 0 ? 0 : (i * 37 + s * 11) % 63 + 1;
    x[i] = float(level[i] - 32) * (float(s + 1) / 64.0f);
  }
  BlockQ6_K block;
  quantize_row_q6_k(x.data(), &block, 256);
  EXPECT_EQ(block.d, fp32_to_fp16(-1.0f / 512.0f));
  for (int s = 0; s < 16; ++s) EXPECT_EQ(block.scales[s], -8 * (s + 1)) << s;
  const auto out = dequantize(block);
  for (int i = 0; i < 256; ++i) {
    EXPECT_EQ(quant(block.ql, block.qh, q6_k_bits(i)), level[i]) << i;
    EXPECT_FLOAT_EQ(out[i], x[i]) << i;
  }
}

}  // namespace
}  // namespace strata
