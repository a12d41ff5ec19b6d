// The CUDA kernels' exponential (device_math.h) against the C library's, whose results the CPU
// backend's softmax, SiLU and sigmoid take: equal bits on every tested float. No GPU needed.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "cuda/device_math.h"

namespace strata::cuda {
namespace {

TEST(DeviceMath, ExponentialIsTheCLibrarys) {
  // Every 61st float below 110 in magnitude (the range where e^x is neither 0 nor infinite and
  // its neighbours), and the edges.
  int64_t tested = 0, differing = 0;
  auto check = [&](float x) {
    const float ours = exact_expf(x), theirs = std::exp(x);
    ++tested;
    if (std::memcmp(&ours, &theirs, 4) != 0 && differing++ < 5)
      ADD_FAILURE() << "e^" << std::hexfloat << x << ": " << ours << " against " << theirs;
  };
  for (uint64_t bits = 0; bits < (uint64_t(1) << 32); bits += 61) {
    float x;
    const uint32_t word = uint32_t(bits);
    std::memcpy(&x, &word, 4);
    if (std::fabs(x) < 110.0f) check(x);
  }
  for (const float x :
       {0.0f, -0.0f, 88.0f, 88.72f, 89.0f, -87.0f, -103.9f, -104.0f, -200.0f, INFINITY, -INFINITY})
    check(x);
  EXPECT_EQ(differing, 0) << "of " << tested;
  EXPECT_TRUE(std::isnan(exact_expf(NAN)));
}

}  // namespace
}  // namespace strata::cuda
