// Q2_0's specification and quantizer: the layout decoded by hand for every byte value at every
// position and every scale, the grid {-d, 0, d, 2d} and its mirror, blocks on the grid recovered
// exactly, the search within a small margin of the best fp16 scale found by trying them all,
// importance weights that lower the weighted error, and inputs at the ends of fp16's range.
// (Its dot products are tested with the other formats': legacy_vec_dot_test.cpp and
// cpu/kernels/legacy_kernels_test.cpp.)
#include "quant/q2_0.h"

#include "gguf/tensor_types.h"
#include "quant/quant_type.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace strata {
namespace {

constexpr int kBlock = int(kQ2_0BlockSize);

// The layout of q2_0.h read independently: weight j's code is in byte 2 + j % 16 of the block,
// at bit 2 * (j / 16).
float spec_value(const uint8_t* block, int j) {
  const int code = (block[2 + j % 16] >> (2 * (j / 16))) & 3;
  return float(code - 1) * fp16_to_fp32(fp16_t(block[0] | block[1] << 8));
}

std::vector<float> dequantize(const std::vector<uint8_t>& row) {
  const int64_t n = int64_t(row.size() / sizeof(BlockQ2_0)) * kBlock;
  std::vector<float> out(static_cast<size_t>(n));
  dequantize_row_q2_0(row.data(), out.data(), n);
  return out;
}

std::vector<uint8_t> quantize(const std::vector<float>& x, const float* importance = nullptr) {
  std::vector<uint8_t> row(x.size() / kBlock * sizeof(BlockQ2_0));
  if (importance)
    quantize_row_q2_0_weighted(x.data(), importance, row.data(), int64_t(x.size()));
  else
    quantize_row_q2_0(x.data(), row.data(), int64_t(x.size()));
  return row;
}

double weighted_error(const std::vector<float>& x, const std::vector<float>& y,
                      const std::vector<float>& importance, int64_t first, int64_t n) {
  double error = 0.0;
  for (int64_t i = first; i < first + n; ++i)
    error += double(importance[size_t(i)]) * std::pow(double(x[size_t(i)]) - y[size_t(i)], 2);
  return error;
}

TEST(Q2_0, GeometryAndTypeIdAreStratasOwn) {
  const QuantTraits& traits = quant_traits(QuantType::kQ2_0);
  EXPECT_EQ(traits.block_size, 64);
  EXPECT_EQ(traits.block_bytes, 18u);
  EXPECT_EQ(traits.vec_dot_type, QuantType::kQ8_0);
  EXPECT_EQ(parse_quant_type("Q2_0").value(), QuantType::kQ2_0);
  const auto* info = gguf::find_tensor_type(uint32_t(QuantType::kQ2_0));
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(info->name, "Q2_0");
  EXPECT_TRUE(gguf::is_strata_type(info->id));
  EXPECT_FALSE(gguf::is_strata_type(uint32_t(QuantType::kQ4_0)));
}

// Every value of every code byte, one block each, over random backgrounds and scales of both
// signs, decodes as the layout says.
TEST(Q2_0, EveryCodeByteAtEveryPositionDecodesByTheLayout) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  std::vector<uint8_t> row;
  for (int position = 2; position < 18; ++position) {
    for (int value = 0; value < 256; ++value) {
      uint8_t block[18];
      for (auto& byte : block) byte = uint8_t(rng());
      const fp16_t d = fp32_to_fp16(unit(rng));
      std::memcpy(block, &d, 2);
      block[position] = uint8_t(value);
      row.insert(row.end(), block, block + 18);
    }
  }
  const auto y = dequantize(row);
  for (size_t b = 0; b < row.size() / 18; ++b)
    for (int j = 0; j < kBlock; ++j)
      ASSERT_EQ(y[b * kBlock + j], spec_value(&row[b * 18], j)) << "block " << b << " weight " << j;
}

TEST(Q2_0, GridIsMinusDZeroDTwoDAndANegativeScaleMirrorsIt) {
  uint8_t block[18] = {};
  // Codes 0, 1, 2, 3 for weights 0-15, 16-31, 32-47, 48-63.
  for (int i = 0; i < 16; ++i) block[2 + i] = 0b11100100;
  for (const float d : {0.5f, -0.5f}) {
    const fp16_t h = fp32_to_fp16(d);
    std::memcpy(block, &h, 2);
    float y[kBlock];
    dequantize_row_q2_0(block, y, kBlock);
    for (int j = 0; j < kBlock; ++j)
      EXPECT_EQ(y[j], float(j / 16 - 1) * d) << "d " << d << " " << j;
  }
}

// Values on a block's grid (every code present, scales of both signs) come back exactly.
TEST(Q2_0, BlocksOnTheGridAreRecoveredExactly) {
  std::mt19937 rng(2);
  std::vector<float> x;
  for (int b = 0; b < 200; ++b) {
    const float d = fp16_to_fp32(fp32_to_fp16(
                        std::ldexp(1.0f + float(rng() % 1000) / 1000.0f, int(rng() % 20) - 10))) *
                    (b % 2 ? -1.0f : 1.0f);
    for (int j = 0; j < kBlock; ++j) x.push_back(float(j < 4 ? j : int(rng() % 4)) * d - d);
  }
  const auto y = dequantize(quantize(x));
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(y[i], x[i]) << i;
}

TEST(Q2_0, ZerosAndOneValueBlocks) {
  std::vector<float> x(3 * kBlock, 0.0f);
  for (int j = 0; j < kBlock; ++j) x[kBlock + j] = 3.0f;  // one value: 2d or -d, exact
  for (int j = 0; j < kBlock; ++j) x[2 * kBlock + j] = -3.0f;
  const auto y = dequantize(quantize(x));
  for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(y[i], x[i]) << i;
}

// The best error any fp16 scale can give a block (each weight on its nearest grid point), found
// by trying every finite fp16 value of either sign.
double best_possible_error(const float* x) {
  double best = 0.0;
  for (int j = 0; j < kBlock; ++j) best += double(x[j]) * x[j];  // d = 0
  for (uint32_t h = 1; h < 0x7c00; ++h) {
    for (const uint32_t sign : {0u, 0x8000u}) {
      const float d = fp16_to_fp32(fp16_t(h | sign));
      double error = 0.0;
      for (int j = 0; j < kBlock && error < best; ++j) {
        const double q = std::clamp(std::nearbyint(double(x[j]) / d), -1.0, 2.0);
        error += std::pow(double(x[j]) - q * d, 2);
      }
      best = std::min(best, error);
    }
  }
  return best;
}

// The search's candidates and least-squares refits come within 2 % of the exhaustive optimum on
// every Gaussian block, with and without outliers, and within 0.2 % in the sum.
TEST(Q2_0, SearchComesCloseToTheBestScale) {
  std::mt19937 rng(3);
  std::normal_distribution<float> normal;
  for (const float outlier_rate : {0.0f, 0.05f}) {
    double ours_total = 0.0, best_total = 0.0;
    for (int b = 0; b < 60; ++b) {
      std::vector<float> x(kBlock);
      for (auto& v : x)
        v = normal(rng) * 0.02f * (float(rng() % 1000) < 1000 * outlier_rate ? 6.0f : 1.0f);
      const auto y = dequantize(quantize(x));
      double ours = 0.0;
      for (int j = 0; j < kBlock; ++j) ours += std::pow(double(x[j]) - y[j], 2);
      const double best = best_possible_error(x.data());
      EXPECT_LE(ours, best * 1.02 + 1e-12) << "block " << b << " outliers " << outlier_rate;
      ours_total += ours;
      best_total += best;
    }
    EXPECT_LE(ours_total, best_total * 1.002) << "outliers " << outlier_rate;
  }
}

// Importance moves the error onto the weights that matter: the weighted error is lower than
// the unweighted quantizer's (it is what the weighted search minimizes), equal importance gives
// the unweighted bytes, and a block whose importance is all zero is quantized unweighted.
TEST(Q2_0, ImportanceLowersTheWeightedError) {
  std::mt19937 rng(4);
  std::normal_distribution<float> normal;
  constexpr int kBlocks = 300;
  std::vector<float> x(kBlocks * kBlock), importance(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = normal(rng);
    importance[i] = rng() % 8 == 0 ? 20.0f : 0.1f;  // a few hot channels, as activations have
  }
  const auto plain = dequantize(quantize(x));
  const auto weighted = dequantize(quantize(x, importance.data()));
  int worse = 0;
  for (int b = 0; b < kBlocks; ++b)
    worse += weighted_error(x, weighted, importance, b * kBlock, kBlock) >
             weighted_error(x, plain, importance, b * kBlock, kBlock) * (1 + 1e-6);
  const double total_weighted = weighted_error(x, weighted, importance, 0, int64_t(x.size()));
  const double total_plain = weighted_error(x, plain, importance, 0, int64_t(x.size()));
  EXPECT_LT(total_weighted, 0.8 * total_plain);
  EXPECT_LT(worse, kBlocks / 20);  // a search, not an exhaustive optimum: rarely worse

  const std::vector<float> ones(x.size(), 1.0f), zeros(x.size(), 0.0f);
  EXPECT_EQ(quantize(x, ones.data()), quantize(x));
  EXPECT_EQ(quantize(x, zeros.data()), quantize(x));
}

// Values beyond what an fp16 scale can reach clamp to the largest scale; values whose scale is
// below fp16's normal range still quantize, and values too small for any become zero; nothing
// becomes infinite or NaN.
TEST(Q2_0, HugeAndTinyValuesStayFinite) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  for (const float scale : {1e6f, 6e4f, 1e-6f}) {
    std::vector<float> x(4 * kBlock);
    for (auto& v : x) v = unit(rng) * scale;
    const auto y = dequantize(quantize(x));
    double error = 0.0, energy = 0.0;
    for (size_t i = 0; i < x.size(); ++i) {
      ASSERT_TRUE(std::isfinite(y[i])) << scale << " " << i;
      error += std::pow(double(x[i]) - y[i], 2);
      energy += double(x[i]) * x[i];
    }
    // Uniform values on 4 levels leave about 1/16 of the energy; clamped or subnormal scales
    // somewhat more, never more than everything.
    EXPECT_LT(error, energy) << scale;
    if (scale == 6e4f || scale == 1e-6f) {
      EXPECT_LT(error, 0.15 * energy) << scale;
    }
  }
  // Below half of fp16's smallest subnormal every scale rounds to 0: the block is zero.
  std::vector<float> x(kBlock);
  for (auto& v : x) v = unit(rng) * 1e-9f;
  for (float v : dequantize(quantize(x))) EXPECT_EQ(v, 0.0f);
}

}  // namespace
}  // namespace strata
