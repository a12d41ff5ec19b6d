#include "experts/misses_on_host.h"

#include <gtest/gtest.h>

namespace strata {
namespace {

constexpr uint64_t kUnit = 1'000'000;

TEST(MissesOnHost, NoneWhenOff) {
  EXPECT_EQ(MissesOnHost{}.count(8, kUnit, 0), 0);
  EXPECT_FALSE(MissesOnHost{}.enabled());
}

TEST(MissesOnHost, WithoutRatesTheCountItself) {
  const MissesOnHost rule{.max_per_layer = 3};
  EXPECT_EQ(rule.count(8, kUnit, 0), 3);
  EXPECT_EQ(rule.count(2, kUnit, 0), 2);
  EXPECT_EQ(rule.count(0, kUnit, 0), 0);
}

// Copies at 1 unit a millisecond; the CPU at half that, after a quarter-millisecond hand-over.
TEST(MissesOnHost, SplitsWhereBothFinishSoonest) {
  const MissesOnHost rule{.max_per_layer = 8,
                          .copy_bytes_per_s = 1e9,
                          .compute_bytes_per_s = 0.5e9,
                          .handoff_s = 0.25e-3};
  // 6 misses: copies of 6 - j units take 6 - j ms, the CPU 0.25 + 2 j ms: j = 2 (4 ms, 4.25 ms)
  // beats j = 1 (5 ms) and j = 3 (6.25 ms).
  EXPECT_EQ(rule.count(6, kUnit, 0), 2);
  // One miss: copying it (1 ms) beats the CPU (2.25 ms).
  EXPECT_EQ(rule.count(1, kUnit, 0), 0);
  // Late read-aheads still on the bus make copies finish later: more go to the CPU.
  EXPECT_EQ(rule.count(6, kUnit, 3 * kUnit), 3);
  // Never more than the cap.
  MissesOnHost capped = rule;
  capped.max_per_layer = 1;
  EXPECT_EQ(capped.count(6, kUnit, 0), 1);
}

TEST(MissesOnHost, ASlowCpuTakesNone) {
  const MissesOnHost rule{.max_per_layer = 8, .copy_bytes_per_s = 50e9, .compute_bytes_per_s = 1e9};
  EXPECT_EQ(rule.count(8, kUnit, 0), 0);
}

}  // namespace
}  // namespace strata
