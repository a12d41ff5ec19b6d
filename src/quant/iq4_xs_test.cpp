#include "quant/iq4_xs.h"

#include "quant/k_quant_test_util.h"

#include <gtest/gtest.h>

#include <array>

namespace strata {
namespace {

using namespace kquant_test;

std::array<float, 256> dequantize(const BlockIQ4_XS& block) {
  std::array<float, 256> out;
  dequantize_row_iq4_xs(&block, out.data(), 256);
  return out;
}

void set_scale_code(BlockIQ4_XS& block, int s, int code) {
  set_bits(block.scales_l, 4 * s, 4, code & 15);
  uint8_t high[2];
  std::memcpy(high, &block.scales_h, 2);
  set_bits(high, 2 * s, 2, code >> 4);
  std::memcpy(&block.scales_h, high, 2);
}

void set_index(BlockIQ4_XS& block, int i, int index) {
  const QuantBits bits = iq4_xs_bits(i);
  set_bits(block.qs, bits.low_first, bits.low_count, index);
}

TEST(IQ4XS, DequantizeMatchesBitLayoutOnRandomBlocks) {
  std::mt19937 rng(46);
  for (int trial = 0; trial < 2000; ++trial) {
    BlockIQ4_XS block;
    fill_random_bytes(reinterpret_cast<uint8_t*>(&block), sizeof block, rng);
    block.d = random_finite_half(rng);
    const auto out = dequantize(block);
    for (int i = 0; i < 256; ++i)
      ASSERT_EQ(float_bits(out[i]), float_bits(ref_iq4_xs(block, i).value)) << trial << " " << i;
  }
}

// Over 64 rounds, sub-block s gets code (round + 11s) % 64: every 6-bit code at every position;
// the scale is code - 32.
TEST(IQ4XS, EveryScaleCodeAtEveryPositionWithItsSignedOffset) {
  for (int round = 0; round < 64; ++round) {
    BlockIQ4_XS block = {};
    block.d = fp32_to_fp16(1.0f);
    for (int s = 0; s < 8; ++s) set_scale_code(block, s, (round + 11 * s) % 64);
    for (int i = 0; i < 256; ++i) set_index(block, i, 8);  // code book value +1
    const auto out = dequantize(block);
    for (int i = 0; i < 256; ++i)
      ASSERT_EQ(out[i], float((round + 11 * (i / 32)) % 64 - 32)) << round << " " << i;
  }
}

TEST(IQ4XS, EveryCodeBookIndexAtEveryPosition) {
  for (int round = 0; round < 16; ++round) {
    BlockIQ4_XS block = {};
    block.d = fp32_to_fp16(1.0f);
    for (int s = 0; s < 8; ++s) set_scale_code(block, s, 33);  // scale +1
    for (int i = 0; i < 256; ++i) set_index(block, i, (round + i) % 16);
    const auto out = dequantize(block);
    for (int i = 0; i < 256; ++i)
      ASSERT_EQ(out[i], float(kIQ4NLValues[(round + i) % 16])) << round << " " << i;
  }
}

// Sub-block s holds code book values times k_s / 128 (dyadic, so every fit lands on it), each
// with index 0 (-127, its largest magnitude) and other indices; k_0 = 32 is the largest, so
// d = -(1/4) / 32 and the codes are 32 - k_s; d * (code - 32) is exactly k_s / 128, so every index
// comes back.
TEST(IQ4XS, QuantizesKnownScalesToKnownCodes) {
  const int k[8] = {32, 1, 7, 16, 31, 12, 25, 3};
  std::array<float, 256> x;
  std::array<int, 256> index;
  for (int i = 0; i < 256; ++i) {
    const int s = i / 32;
    index[i] = i % 32 == 0 ? 0 : (i * 5 + s) % 16;
    x[i] = float(kIQ4NLValues[index[i]]) * (float(k[s]) / 128.0f);
  }
  BlockIQ4_XS block;
  quantize_row_iq4_xs(x.data(), &block, 256);
  EXPECT_EQ(block.d, fp32_to_fp16(-1.0f / 128.0f));
  for (int s = 0; s < 8; ++s) EXPECT_EQ(iq4_xs_scale_code(block, s), 32 - k[s]) << s;
  const auto out = dequantize(block);
  for (int i = 0; i < 256; ++i) {
    EXPECT_EQ(quant(block.qs, nullptr, iq4_xs_bits(i)), index[i]) << i;
    EXPECT_EQ(out[i], x[i]) << i;
  }
}

}  // namespace
}  // namespace strata
