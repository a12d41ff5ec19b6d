// The CPU's kernel table: a row for every format, the kernels this CPU is meant to run (also
// under STRATA_SIMD=avx2 and =scalar: ctest cpu_avx2, cpu_scalar), quantizers that write the
// reference's bytes, and rows kernels that give the dot product's bits. The kernels' own
// numbers are tested against the reference in legacy_kernels_test.cpp and
// k_quant_kernels_test.cpp.
#include "cpu/kernels/format_kernels.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <random>
#include <vector>

#include "base/cpu_features.h"
#include "cpu/kernels/simd_kernels.h"
#include "quant/q4_0.h"
#include "quant/q4_k.h"
#include "quant/q8_0.h"
#include "quant/q8_k.h"

namespace strata {
namespace {

// Gaussian floats whose scale changes every 32 values (1e-3 to 1e3), so that blocks differ.
std::vector<float> random_floats(int64_t n, std::mt19937& rng) {
  std::normal_distribution<float> normal;
  std::vector<float> x(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    x[size_t(i)] = normal(rng) * std::pow(10.0f, float(i / 32 % 7) - 3);
  return x;
}

TEST(FormatKernels, EveryFormatHasItsFunctions) {
  for (const QuantTraits& traits : all_quant_traits()) {
    const FormatKernels& kernels = format_kernels(traits.type);
    EXPECT_NE(kernels.quantize_row, nullptr) << traits.name;
    EXPECT_EQ(kernels.vec_dot != nullptr, traits.vec_dot_reference != nullptr) << traits.name;
    EXPECT_TRUE(kernels.vec_dot_rows == nullptr || kernels.vec_dot != nullptr) << traits.name;
  }
}

// What the table picks on each SIMD level, for formats of each kind of kernel.
TEST(FormatKernels, ChoosesWhatThisCpuRuns) {
  const FormatKernels& q4_0 = format_kernels(QuantType::kQ4_0);
  const FormatKernels& q4_k = format_kernels(QuantType::kQ4_K);
  const FormatKernels& q8_0 = format_kernels(QuantType::kQ8_0);
  const FormatKernels& q8_k = format_kernels(QuantType::kQ8_K);
  if (simd_level() == SimdLevel::kScalar) {
    EXPECT_EQ(q4_0.vec_dot, vec_dot_q4_0_scalar);
    EXPECT_EQ(q4_0.vec_dot_rows, nullptr);
    EXPECT_EQ(q4_k.vec_dot, vec_dot_q4_k_scalar);
    EXPECT_EQ(q8_0.quantize_row, quantize_row_q8_0);
    EXPECT_EQ(q8_k.quantize_row, quantize_row_q8_k);
    return;
  }
  EXPECT_EQ(q4_0.vec_dot, vec_dot_q4_0_avx2);
  EXPECT_EQ(q8_0.quantize_row, quantize_row_q8_0_avx2);
  EXPECT_EQ(q8_k.quantize_row, quantize_row_q8_k_avx2);
  EXPECT_EQ(q4_0.vec_dot_rows, avx512_vnni() ? vec_dot_rows_q4_0_avx512 : vec_dot_rows_q4_0_avx2);
  EXPECT_EQ(q4_k.vec_dot, avx512_vnni() ? vec_dot_q4_k_avx512 : vec_dot_q4_k_avx2);
  EXPECT_EQ(q4_k.vec_dot_rows, nullptr);
}

TEST(FormatKernels, QuantizersWriteTheReferenceBytes) {
  std::mt19937 rng(31);
  const int64_t n = 256 * 4;
  const std::vector<float> x = random_floats(n, rng);
  for (const QuantTraits& traits : all_quant_traits()) {
    std::vector<uint8_t> got(traits.row_bytes(n)), want(traits.row_bytes(n));
    format_kernels(traits.type).quantize_row(x.data(), got.data(), n);
    traits.quantize_row(x.data(), want.data(), n);
    EXPECT_EQ(got, want) << traits.name;
  }
}

// Each row from the rows kernel has the bits of vec_dot on that row alone, for 1 to 11 rows.
TEST(FormatKernels, RowsKernelsGiveTheBitsOfTheDotProduct) {
  constexpr int kMaxRows = 11;
  std::mt19937 rng(32);
  for (const QuantTraits& traits : all_quant_traits()) {
    const FormatKernels& kernels = format_kernels(traits.type);
    if (!kernels.vec_dot_rows) continue;
    for (int64_t n : {256, 2048}) {
      const size_t row_bytes = traits.row_bytes(n);
      std::vector<uint8_t> w(kMaxRows * row_bytes);
      for (int r = 0; r < kMaxRows; ++r)
        traits.quantize_row(random_floats(n, rng).data(), w.data() + r * row_bytes, n);
      const QuantTraits& activations = quant_traits(traits.vec_dot_type);
      std::vector<uint8_t> x(activations.row_bytes(n));
      format_kernels(activations.type).quantize_row(random_floats(n, rng).data(), x.data(), n);
      for (int n_rows = 1; n_rows <= kMaxRows; ++n_rows) {
        float rows[kMaxRows];
        kernels.vec_dot_rows(n, w.data(), row_bytes, n_rows, x.data(), rows);
        for (int r = 0; r < n_rows; ++r) {
          float alone;
          kernels.vec_dot(n, w.data() + r * row_bytes, x.data(), x.size(), 1, &alone);
          EXPECT_EQ(std::bit_cast<uint32_t>(alone), std::bit_cast<uint32_t>(rows[r]))
              << traits.name << " n=" << n << " row " << r << " of " << n_rows;
        }
      }
    }
  }
}

}  // namespace
}  // namespace strata
