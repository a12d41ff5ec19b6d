// The CPU kernels of the dense and 32-weight block formats and Q2_0: AVX2 against the scalar
// reference and the float64 dot of the dequantized values (quant/legacy_dot_test_util.h), on random
// rows of many lengths, 1 to 9 columns, misaligned and strided; the AVX2 kernels' promise that a
// column's bits do not depend on its group; the rows kernels' promise of the one-column
// kernel's bits; and the AVX-512 rows kernels' promise of the AVX2 ones' bits.
#include "base/cpu_features.h"
#include "cpu/kernels/kernel_test_support.h"
#include "cpu/kernels/simd_kernels.h"
#include "quant/legacy_dot_test_util.h"

#include <gtest/gtest.h>

#include <bit>
#include <cstdlib>

namespace strata {
namespace {

using namespace legacy_test;

// The format's row of the CPU's kernel table: every weight format here has an AVX2 kernel.
const SimdKernels& kernels(const Format& f) {
  const SimdKernels* row = find_simd_kernels(f.type);
  if (row == nullptr || row->dot_avx2 == nullptr) std::abort();
  return *row;
}

TEST(LegacyVecDot, Avx2MatchesScalarForEveryColumnCount) {
  if (!cpu_runs_avx2_kernels()) GTEST_SKIP() << "CPU lacks AVX2/FMA/F16C/BMI2";
  std::mt19937 rng(11);
  for_each_problem(rng, [](const Format& f, const Problem& p) {
    float scalar[kMaxColumns];
    run_all_columns(f.dot_scalar, p, kMaxColumns, scalar);
    for (int n_cols = 1; n_cols <= kMaxColumns; ++n_cols) {
      float avx2[kMaxColumns + 1];
      avx2[n_cols] = 12345.0f;  // a kernel writing past n_cols shows here
      run_all_columns(kernels(f).dot_avx2, p, n_cols, avx2);
      EXPECT_EQ(avx2[n_cols], 12345.0f) << f.name << " wrote past column " << n_cols;
      for (int c = 0; c < n_cols; ++c) {
        // Both are float computations within tolerance of the exact dot.
        const Reference want = reference(p, c);
        EXPECT_NEAR(avx2[c], scalar[c], 2 * want.tolerance)
            << f.name << " n=" << p.n << " n_cols=" << n_cols << " column " << c;
        EXPECT_NEAR(avx2[c], want.dot, want.tolerance)
            << f.name << " n=" << p.n << " n_cols=" << n_cols << " column " << c;
      }
    }
  });
}

// A column's result is the same bits whether it is computed alone, in a group of 4, or in the
// remainder group, and whatever the alignment of the rows.
TEST(LegacyVecDot, Avx2ColumnBitsDoNotDependOnGrouping) {
  if (!cpu_runs_avx2_kernels()) GTEST_SKIP() << "CPU lacks AVX2/FMA/F16C/BMI2";
  std::mt19937 rng(12);
  for_each_problem(rng, [](const Format& f, const Problem& p) {
    const VecDotFn dot = kernels(f).dot_avx2;
    const int64_t n = p.n;
    for (int n_cols : {7, kMaxColumns}) {
      float grouped[kMaxColumns];
      run_all_columns(dot, p, n_cols, grouped);
      for (int c = 0; c < n_cols; ++c) {
        float alone;
        dot(n, p.w(), p.x(c), p.stride, 1, &alone);
        EXPECT_EQ(std::bit_cast<uint32_t>(alone), std::bit_cast<uint32_t>(grouped[c]))
            << f.name << " n=" << n << " column " << c << " of " << n_cols;
      }
    }
    // The same rows at aligned addresses.
    const size_t row_bytes = f.row_bytes(n), x_bytes = p.activation_format->row_bytes(n);
    std::vector<float> w_aligned((row_bytes + 3) / 4), x_aligned((x_bytes + 3) / 4);
    std::memcpy(w_aligned.data(), p.w(), row_bytes);
    std::memcpy(x_aligned.data(), p.x(2), x_bytes);
    float misaligned, aligned;
    dot(n, p.w(), p.x(2), p.stride, 1, &misaligned);
    dot(n, w_aligned.data(), x_aligned.data(), x_bytes, 1, &aligned);
    EXPECT_EQ(std::bit_cast<uint32_t>(misaligned), std::bit_cast<uint32_t>(aligned))
        << f.name << " n=" << n;
  });
}

// Runs check(n, rows, row_bytes, n_rows, problem) for every length of f and every row count up
// to kMaxRows, on kMaxRows random weight rows stored from an odd address.
constexpr int kMaxRows = 11;
template <class Check>
void for_each_rows_case(const Format& f, std::mt19937& rng, Check&& check) {
  for (int64_t n : lengths(f)) {
    const size_t row_bytes = f.row_bytes(n);
    std::vector<uint8_t> matrix(1 + kMaxRows * row_bytes, 0xee);
    for (int r = 0; r < kMaxRows; ++r) {
      const auto row = random_weights(f, n, rng);
      std::memcpy(matrix.data() + 1 + r * row_bytes, row.data(), row_bytes);
    }
    const Problem p = make_problem(f, n, rng);
    for (int n_rows = 1; n_rows <= kMaxRows; ++n_rows)
      check(n, matrix.data() + 1, row_bytes, n_rows, p);
  }
}

// Decode's many-rows kernel gives each row the bits of the one-column kernel, for every row
// count (groups of four and each remainder), and writes nothing past the last row.
TEST(LegacyVecDot, Avx2RowsKernelMatchesOneColumnKernelBitForBit) {
  if (!cpu_runs_avx2_kernels()) GTEST_SKIP() << "CPU lacks AVX2/FMA/F16C/BMI2";
  std::mt19937 rng(13);
  int checked_formats = 0;
  for (const auto& f : weight_formats()) {
    if (!kernels(f).dot_rows_avx2) continue;
    ++checked_formats;
    for_each_rows_case(
        f, rng,
        [&](int64_t n, const uint8_t* matrix, size_t row_bytes, int n_rows, const Problem& p) {
          float rows[kMaxRows + 1];
          rows[n_rows] = 12345.0f;
          kernels(f).dot_rows_avx2(n, matrix, row_bytes, n_rows, p.x(), rows);
          EXPECT_EQ(rows[n_rows], 12345.0f) << f.name << " wrote past row " << n_rows;
          for (int r = 0; r < n_rows; ++r) {
            float alone;
            kernels(f).dot_avx2(n, matrix + r * row_bytes, p.x(), p.stride, 1, &alone);
            EXPECT_EQ(std::bit_cast<uint32_t>(alone), std::bit_cast<uint32_t>(rows[r]))
                << f.name << " n=" << n << " row " << r << " of " << n_rows;
          }
        });
  }
  EXPECT_EQ(checked_formats, 7);
}

// The AVX-512 rows kernels promise the AVX2 rows kernels' bits (block32_avx512.h,
// q8_0_avx512.cpp), for every row count and length (odd block counts end in a half pair, odd row
// counts in a half row pair), and write nothing past the end.
TEST(LegacyVecDot, Avx512RowsKernelMatchesAvx2BitForBit) {
  if (!avx512_vnni()) GTEST_SKIP() << "CPU lacks AVX-512 VNNI (or STRATA_SIMD keeps to AVX2)";
  std::mt19937 rng(17);
  int checked_formats = 0;
  for (const auto& f : weight_formats()) {
    if (!kernels(f).dot_rows_avx512) continue;
    ++checked_formats;
    for_each_rows_case(
        f, rng,
        [&](int64_t n, const uint8_t* matrix, size_t row_bytes, int n_rows, const Problem& p) {
          float want[kMaxRows], got[kMaxRows + 1];
          got[n_rows] = 12345.0f;
          kernels(f).dot_rows_avx2(n, matrix, row_bytes, n_rows, p.x(), want);
          kernels(f).dot_rows_avx512(n, matrix, row_bytes, n_rows, p.x(), got);
          EXPECT_EQ(got[n_rows], 12345.0f) << f.name << " wrote past row " << n_rows;
          for (int r = 0; r < n_rows; ++r)
            EXPECT_EQ(std::bit_cast<uint32_t>(want[r]), std::bit_cast<uint32_t>(got[r]))
                << f.name << " n=" << n << " row " << r << " of " << n_rows;
        });
  }
  EXPECT_EQ(checked_formats, 3);
}

// Extreme codes: every weight at its largest magnitude against activations of 127 and -127,
// where the int8 products and their int16 pair sums are largest.
TEST(LegacyVecDot, Avx2ExtremeQuantsDoNotOverflow) {
  if (!cpu_runs_avx2_kernels()) GTEST_SKIP() << "CPU lacks AVX2/FMA/F16C/BMI2";
  for (const auto& f : weight_formats()) {
    if (f.block_size < 32) continue;
    for (uint8_t fill : {0x00, 0xff, 0x80, 0x7f}) {
      const Problem p = extreme_problem(f, fill);
      float avx2;
      kernels(f).dot_avx2(p.n, p.w(), p.x(), p.stride, 1, &avx2);
      const Reference want = reference(p, 0);
      EXPECT_NEAR(avx2, want.dot, want.tolerance) << f.name << " fill " << int(fill);
      if (kernels(f).dot_rows_avx512 && avx512_vnni()) {
        float avx512;
        kernels(f).dot_rows_avx512(p.n, p.w(), f.row_bytes(p.n), 1, p.x(), &avx512);
        EXPECT_EQ(std::bit_cast<uint32_t>(avx2), std::bit_cast<uint32_t>(avx512))
            << f.name << " fill " << int(fill);
      }
    }
  }
}

}  // namespace
}  // namespace strata
