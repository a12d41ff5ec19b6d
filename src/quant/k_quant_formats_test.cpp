// Properties every super-block weight format must have, checked for each one: the reference dot
// product against the exact dot product of the decoded values (the CPU kernels' tests,
// cpu/kernels/k_quant_kernels_test.cpp, hold them to the same checks), column independence,
// quantizer round trips and degenerate rows.
#include "quant/k_quant_dot_test_util.h"

#include <gtest/gtest.h>

#include <string>

namespace strata {
namespace {

using namespace kquant_test;

class KQuantFormat : public testing::TestWithParam<Format> {};

TEST_P(KQuantFormat, ScalarDotMatchesExactDot) {
  check_vec_dot(GetParam(), GetParam().scalar, "scalar");
}

TEST_P(KQuantFormat, ScalarDotOfExtremeBlocks) {
  check_extremes(GetParam(), GetParam().scalar, "scalar");
}

TEST_P(KQuantFormat, ScalarColumnsAreIndependent) {
  check_column_independence(GetParam(), GetParam().scalar);
}

std::vector<float> round_trip(const Format& format, const std::vector<float>& x) {
  std::vector<uint8_t> blocks(x.size() / 256 * format.block_bytes);
  format.quantize(x.data(), blocks.data(), int64_t(x.size()));
  std::vector<float> out(x.size());
  format.dequantize(blocks.data(), out.data(), int64_t(x.size()));
  return out;
}

TEST_P(KQuantFormat, RoundTripErrorOfGaussianRows) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(256 * 256);
  for (float& v : x) v = normal(rng);
  const auto out = round_trip(GetParam(), x);
  double error2 = 0, value2 = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    error2 += double(out[i] - x[i]) * (out[i] - x[i]);
    value2 += double(x[i]) * x[i];
  }
  const double relative_rmse = std::sqrt(error2 / value2);
  EXPECT_LE(relative_rmse, GetParam().max_relative_rmse);
  std::printf("%s relative RMSE %.4f\n", GetParam().name, relative_rmse);
}

TEST_P(KQuantFormat, AllZeroRowStaysZero) {
  const std::vector<float> x(512, 0.0f);
  for (float v : round_trip(GetParam(), x)) ASSERT_EQ(v, 0.0f);
}

// Constant rows are representable up to the fp16 rounding of the block scales (2^-11 relative,
// at most two of them multiply into a weight). The values keep every fp16 scale normal: Q6_K's
// d is about |value| / 4096, and a subnormal d has fewer significant bits (3e-3 comes back as
// 2.93e-3 in Q6_K, which is the format, not an error).
constexpr float kConstantRowRelativeError = 1e-3f;

TEST_P(KQuantFormat, ConstantRowsComeBack) {
  for (float value : {0.5f, -0.5f, 3.0f, -70.0f}) {
    const std::vector<float> x(512, value);
    for (float v : round_trip(GetParam(), x))
      ASSERT_NEAR(v, value, kConstantRowRelativeError * std::fabs(value)) << value;
  }
}

// One weight 1e4 times larger than the rest: it sets its super-block's scales, so it comes back
// up to the scale roundings, and its neighbours (far below one step) cannot move by more than a
// step of that super-block; the other super-block is unaffected.
constexpr float kOutlierRelativeError = 1e-2f;

TEST_P(KQuantFormat, OneOutlier) {
  const Format& format = GetParam();
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 0.01f);
  std::vector<float> x(512);
  for (float& v : x) v = normal(rng);
  x[77] = 100.0f;
  const auto out = round_trip(format, x);
  EXPECT_NEAR(out[77], 100.0f, 100.0f * kOutlierRelativeError);
  const float step = 2 * 100.0f / float(format.levels - 1);
  for (int i = 0; i < 256; ++i) ASSERT_LE(std::fabs(out[i] - x[i]), step) << i;
  double error2 = 0, value2 = 0;
  for (int i = 256; i < 512; ++i) {
    error2 += double(out[i] - x[i]) * (out[i] - x[i]);
    value2 += double(x[i]) * x[i];
  }
  EXPECT_LE(std::sqrt(error2 / value2), 1.3 * format.max_relative_rmse);
}

INSTANTIATE_TEST_SUITE_P(All, KQuantFormat, testing::ValuesIn(kFormats),
                         [](const testing::TestParamInfo<Format>& info) {
                           return std::string(info.param.name);
                         });

}  // namespace
}  // namespace strata
