// The reference dot products of the dense and 32-weight block formats and Q2_0 against a float64
// dot of the dequantized values, on random rows (random block bytes cover every code) of many
// lengths, 1 to 9 columns, misaligned and strided, and on extreme codes. The CPU kernels' tests
// (cpu/kernels/legacy_kernels_test.cpp) hold them to the same bounds.
#include "quant/legacy_dot_test_util.h"

#include <gtest/gtest.h>

namespace strata {
namespace {

using namespace legacy_test;

TEST(LegacyVecDot, ScalarMatchesFloat64Dot) {
  std::mt19937 rng(10);
  for_each_problem(rng, [](const Format& f, const Problem& p) {
    float out[kMaxColumns];
    run_all_columns(f.dot_scalar, p, kMaxColumns, out);
    for (int c = 0; c < kMaxColumns; ++c) {
      const Reference want = reference(p, c);
      EXPECT_NEAR(out[c], want.dot, want.tolerance) << f.name << " n=" << p.n << " column " << c;
    }
  });
}

// Extreme codes: every weight at its largest magnitude against activations of 127 and -127.
TEST(LegacyVecDot, ScalarExtremeQuantsStayWithinTheBound) {
  for (const auto& f : weight_formats()) {
    if (f.block_size < 32) continue;
    for (uint8_t fill : {0x00, 0xff, 0x80, 0x7f}) {
      const Problem p = extreme_problem(f, fill);
      float scalar;
      f.dot_scalar(p.n, p.w(), p.x(), p.stride, 1, &scalar);
      const Reference want = reference(p, 0);
      EXPECT_NEAR(scalar, want.dot, want.tolerance) << f.name << " fill " << int(fill);
    }
  }
}

}  // namespace
}  // namespace strata
