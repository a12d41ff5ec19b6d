#include "base/fp16.h"

#include <gtest/gtest.h>
#include <immintrin.h>

#include <cmath>
#include <random>

namespace strata {
namespace {

// The hardware converter (F16C) is an independent reference for every half and many floats.
__attribute__((target("f16c"))) float hw_to_fp32(fp16_t h) { return _cvtsh_ss(h); }
__attribute__((target("f16c"))) fp16_t hw_to_fp16(float f) {
  return _cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT);
}

TEST(Fp16, EveryHalfConvertsExactly) {
  if (!__builtin_cpu_supports("f16c")) GTEST_SKIP() << "no F16C to compare against";
  for (uint32_t i = 0; i < 65536; ++i) {
    const float ours = fp16_to_fp32(fp16_t(i));
    const float hw = hw_to_fp32(fp16_t(i));
    if (std::isnan(hw)) {
      EXPECT_TRUE(std::isnan(ours)) << i;
    } else {
      EXPECT_EQ(std::bit_cast<uint32_t>(ours), std::bit_cast<uint32_t>(hw)) << i;
    }
  }
}

TEST(Fp16, RoundsLikeHardware) {
  if (!__builtin_cpu_supports("f16c")) GTEST_SKIP() << "no F16C to compare against";
  std::mt19937 rng(7);
  for (int i = 0; i < 2'000'000; ++i) {
    const float f = std::bit_cast<float>(uint32_t(rng()));
    if (std::isnan(f)) continue;
    ASSERT_EQ(fp32_to_fp16(f), hw_to_fp16(f)) << f;
  }
  for (uint32_t h = 0; h < 0x7c00; ++h) {  // halfway points between neighbouring halves
    const float lo = hw_to_fp32(fp16_t(h)), hi = hw_to_fp32(fp16_t(h + 1));
    const float mid = lo + (hi - lo) / 2;
    ASSERT_EQ(fp32_to_fp16(mid), hw_to_fp16(mid)) << h;
    ASSERT_EQ(fp32_to_fp16(-mid), hw_to_fp16(-mid)) << h;
  }
}

TEST(Bf16, RoundsToNearestEven) {
  EXPECT_EQ(fp32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(fp32_to_bf16(std::bit_cast<float>(0x3f808000u)), 0x3f80);  // tie, even stays
  EXPECT_EQ(fp32_to_bf16(std::bit_cast<float>(0x3f818000u)), 0x3f82);  // tie, odd rounds up
  EXPECT_EQ(bf16_to_fp32(0xc000), -2.0f);
}

}  // namespace
}  // namespace strata
