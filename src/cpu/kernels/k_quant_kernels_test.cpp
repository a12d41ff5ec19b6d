// The CPU kernels of the super-block formats: AVX2 against the exact dot product of the decoded
// values (the checks of quant/k_quant_dot_test_util.h, which the reference passes too), on random
// rows and extreme blocks, column independence, and the AVX-512 kernels against the AVX2 ones
// bit for bit.
#include "base/cpu_features.h"
#include "cpu/kernels/kernel_test_support.h"
#include "cpu/kernels/simd_kernels.h"
#include "quant/k_quant_dot_test_util.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <ostream>
#include <string>
#include <vector>

namespace strata {
namespace {

using namespace kquant_test;

// A format with its row of the CPU's kernel table.
struct Kernels {
  const Format* format;
  VecDotFn avx2;
  VecDotFn avx512;  // bit-identical to avx2 where there is one (Q2_K, Q4_K, Q5_K, Q6_K)
};

void PrintTo(const Kernels& kernels, std::ostream* os) { *os << kernels.format->name; }

std::vector<Kernels> all_kernels() {
  std::vector<Kernels> all;
  for (const Format& format : kFormats) {
    const SimdKernels* row = find_simd_kernels(format.type);
    if (row == nullptr || row->dot_avx2 == nullptr) std::abort();
    all.push_back({&format, row->dot_avx2, row->dot_avx512});
  }
  return all;
}

class KQuantFormat : public testing::TestWithParam<Kernels> {};

TEST_P(KQuantFormat, Avx2DotMatchesExactDot) {
  if (!cpu_runs_avx2_kernels()) GTEST_SKIP() << "CPU lacks AVX2/FMA/F16C/BMI2; AVX2 kernel not run";
  check_vec_dot(*GetParam().format, GetParam().avx2, "avx2");
}

TEST_P(KQuantFormat, Avx2DotOfExtremeBlocks) {
  if (!cpu_runs_avx2_kernels()) GTEST_SKIP() << "CPU lacks AVX2/FMA/F16C/BMI2; AVX2 kernel not run";
  check_extremes(*GetParam().format, GetParam().avx2, "avx2");
}

TEST_P(KQuantFormat, Avx2ColumnsAreIndependent) {
  if (!cpu_runs_avx2_kernels()) GTEST_SKIP() << "CPU lacks AVX2/FMA/F16C/BMI2; AVX2 kernel not run";
  check_column_independence(*GetParam().format, GetParam().avx2);
}

// An AVX-512 kernel promises the AVX2 kernel's bits for every column of every group size, on
// random rows (misaligned) and on the extreme blocks above.
TEST_P(KQuantFormat, Avx512DotEqualsAvx2ToTheBit) {
  const Kernels& kernels = GetParam();
  const Format& format = *kernels.format;
  if (!kernels.avx512) GTEST_SKIP() << format.name << " has no AVX-512 kernel";
  if (!avx512_vnni()) GTEST_SKIP() << "CPU lacks AVX-512 VNNI (or STRATA_SIMD keeps to AVX2)";
  std::mt19937 rng(4321);
  auto expect_same = [&](int64_t n, const uint8_t* w, const uint8_t* x, size_t stride, int n_cols,
                         const std::string& what) {
    std::vector<float> want(static_cast<size_t>(n_cols)),
        got(static_cast<size_t>(n_cols) + 1, 12345.0f);
    kernels.avx2(n, w, x, stride, n_cols, want.data());
    kernels.avx512(n, w, x, stride, n_cols, got.data());
    EXPECT_EQ(got[size_t(n_cols)], 12345.0f) << what << ": wrote past the last column";
    for (int c = 0; c < n_cols; ++c)
      EXPECT_EQ(float_bits(want[size_t(c)]), float_bits(got[size_t(c)]))
          << what << " n_cols=" << n_cols << " column " << c;
  };
  for (int64_t n_blocks : {1, 2, 5, 32})
    for (int n_cols = 1; n_cols <= 9; ++n_cols) {
      const int64_t n = 256 * n_blocks;
      const size_t stride = size_t(n_blocks) * sizeof(BlockQ8_K) + 37;
      const auto w = random_weights(format, n_blocks, 1, rng);
      const auto x = random_columns(n, n_cols, 1, stride, rng);
      expect_same(n, &w[1], &x[1], stride, n_cols, "random, n=" + std::to_string(n));
    }
  const int64_t n_blocks = 8, n = 256 * n_blocks;
  const size_t stride = size_t(n_blocks) * sizeof(BlockQ8_K);
  for (int pattern : {0x00, 0xff, 0x80, 0x7f, 0xaa, 0x55}) {
    std::vector<uint8_t> w(size_t(n_blocks) * format.block_bytes, uint8_t(pattern));
    const auto x = random_columns(n, 4, 0, stride, rng);
    std::vector<uint8_t> extreme = x;
    for (size_t i = 0; i < extreme.size(); ++i)
      if (i % sizeof(BlockQ8_K) >= offsetof(BlockQ8_K, qs) &&
          i % sizeof(BlockQ8_K) < offsetof(BlockQ8_K, bsums))
        extreme[i] = uint8_t(i % 2 ? 127 : -128);
    expect_same(n, w.data(), x.data(), stride, 4, "pattern " + std::to_string(pattern));
    expect_same(n, w.data(), extreme.data(), stride, 4,
                "pattern " + std::to_string(pattern) + ", activations -128 / 127");
  }
}

INSTANTIATE_TEST_SUITE_P(All, KQuantFormat, testing::ValuesIn(all_kernels()),
                         [](const testing::TestParamInfo<Kernels>& info) {
                           return std::string(info.param.format->name);
                         });

}  // namespace
}  // namespace strata
