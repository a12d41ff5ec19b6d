// Grouped Q4_0 (q4_0_groups.h): grouping keeps every weight; the AVX-512 kernel matches a
// float64 dot of the dequantized rows within its rounding bound, on extreme codes too; and a
// column's bits depend neither on how many columns nor on how many groups a call computes.
#include "cpu/kernels/q4_0_groups.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "base/cpu_features.h"
#include "quant/legacy_test_util.h"

namespace strata {
namespace {

constexpr int kMaxColumns = 9;

struct Problem {
  int64_t n = 0, n_rows = 0;
  std::vector<uint8_t> file_rows;  // GGUF layout
  std::vector<uint8_t> grouped;    // the same rows grouped
  std::vector<uint8_t> columns;    // kMaxColumns Q8_0 rows, back to back
  size_t x_stride() const { return size_t(n / 32) * sizeof(BlockQ8_0); }
  const uint8_t* x(int c) const { return columns.data() + size_t(c) * x_stride(); }
};

Problem make_problem(int64_t n, int64_t n_rows, std::mt19937& rng) {
  const auto& q4_0 = legacy_test::format(QuantType::kQ4_0);
  Problem p{n, n_rows, {}, {}, {}};
  for (int64_t r = 0; r < n_rows; ++r) {
    const auto row = legacy_test::random_weights(q4_0, n, rng);
    p.file_rows.insert(p.file_rows.end(), row.begin(), row.end());
  }
  p.grouped = p.file_rows;
  group_q4_0_rows(p.grouped.data(), n, n_rows);
  std::normal_distribution<float> normal;
  std::vector<float> values(static_cast<size_t>(n));
  p.columns.resize(kMaxColumns * p.x_stride());
  for (int c = 0; c < kMaxColumns; ++c) {
    for (auto& v : values) v = normal(rng);
    quantize_row_q8_0(values.data(), p.columns.data() + size_t(c) * p.x_stride(), n);
  }
  return p;
}

struct Reference {
  double dot, tolerance;
};

// float64 dot of the dequantized weights and activations; the kernel adds n / 32 products per
// partial sum, then 2 additions, and rounds each scale product once: within
// (n / 32 + 8) * 2^-24 * sum |products|.
Reference reference(const Problem& p, int64_t row, int c) {
  std::vector<float> w(static_cast<size_t>(p.n)), x(static_cast<size_t>(p.n));
  dequantize_row_q4_0(p.file_rows.data() + size_t(row) * size_t(p.n / 32) * 18, w.data(), p.n);
  dequantize_row_q8_0(p.x(c), x.data(), p.n);
  double dot = 0, magnitude = 0;
  for (int64_t i = 0; i < p.n; ++i) {
    dot += double(w[size_t(i)]) * x[size_t(i)];
    magnitude += std::fabs(double(w[size_t(i)]) * x[size_t(i)]);
  }
  return {dot, double(p.n / 32 + 8) * 0x1p-24 * magnitude + 1e-30};
}

// On any CPU: with AVX-512 the fast form, else (STRATA_SIMD=avx2, ctest cpu_avx2) the portable
// one that file writers use on such CPUs.
TEST(Q4_0Groups, GroupingKeepsEveryWeight) {
  std::mt19937 rng(1);
  for (int64_t n : {32, 96, 2048}) {
    const Problem p = make_problem(n, 24, rng);
    std::vector<float> want(static_cast<size_t>(n)), got(static_cast<size_t>(n));
    for (int64_t row = 0; row < p.n_rows; ++row) {
      dequantize_row_q4_0(p.file_rows.data() + size_t(row) * size_t(n / 32) * 18, want.data(), n);
      dequantize_grouped_q4_0_row(p.grouped.data(), n, row, got.data());
      ASSERT_EQ(want, got) << "n " << n << " row " << row;
    }
  }
}

TEST(Q4_0Groups, UngroupingGivesBackTheFileRows) {
  std::mt19937 rng(2);
  for (int64_t n : {32, 96, 2048}) {
    const Problem p = make_problem(n, 24, rng);
    std::vector<uint8_t> rows = p.grouped;
    ungroup_q4_0_rows(rows.data(), n, p.n_rows);
    EXPECT_EQ(rows, p.file_rows) << "n " << n;
    group_q4_0_rows(rows.data(), n, p.n_rows);
    EXPECT_EQ(rows, p.grouped) << "n " << n;
  }
}

TEST(Q4_0Groups, ChosenOnlyForQ4_0InWholeGroupsWithTheKernel) {
  EXPECT_EQ(groups_rows(QuantType::kQ4_0, 64), avx512_vnni());
  EXPECT_FALSE(groups_rows(QuantType::kQ4_0, 60));
  EXPECT_FALSE(groups_rows(QuantType::kQ8_0, 64));
}

TEST(Q4_0Groups, KernelMatchesFloat64Dot) {
  if (!avx512_vnni()) GTEST_SKIP() << "CPU lacks AVX-512 VNNI (or STRATA_SIMD keeps to AVX2)";
  std::mt19937 rng(2);
  for (int64_t n_blocks : {1, 2, 3, 7, 16, 64, 129}) {
    const int64_t n = 32 * n_blocks;
    const Problem p = make_problem(n, 16, rng);
    std::vector<float> out(size_t(kMaxColumns) * 16);
    vec_dot_q4_0_groups_avx512(n, p.grouped.data(), 2, p.columns.data(), p.x_stride(), kMaxColumns,
                               out.data(), 16);
    for (int c = 0; c < kMaxColumns; ++c)
      for (int64_t row = 0; row < 16; ++row) {
        const Reference want = reference(p, row, c);
        EXPECT_NEAR(out[size_t(c) * 16 + size_t(row)], want.dot, want.tolerance)
            << "n " << n << " row " << row << " column " << c;
      }
  }
}

// Every quant at 0 or 15 against activations of +-127: the largest int32 lane sums.
TEST(Q4_0Groups, ExtremeQuantsStayExact) {
  if (!avx512_vnni()) GTEST_SKIP() << "CPU lacks AVX-512 VNNI (or STRATA_SIMD keeps to AVX2)";
  const int64_t n = 32 * 5;
  for (uint8_t fill : {0x00, 0xff, 0x0f, 0xf0}) {
    std::mt19937 rng(3);
    Problem p = make_problem(n, 8, rng);
    for (size_t b = 0; b < p.file_rows.size() / 18; ++b)
      std::memset(p.file_rows.data() + b * 18 + 2, fill, 16);
    p.grouped = p.file_rows;
    group_q4_0_rows(p.grouped.data(), n, 8);
    std::vector<float> values(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) values[size_t(i)] = (i % 3 == 0) ? -1.0f : 1.0f;
    quantize_row_q8_0(values.data(), p.columns.data(), n);
    float out[8];
    vec_dot_q4_0_groups_avx512(n, p.grouped.data(), 1, p.columns.data(), p.x_stride(), 1, out, 8);
    for (int row = 0; row < 8; ++row) {
      const Reference want = reference(p, row, 0);
      EXPECT_NEAR(out[row], want.dot, want.tolerance) << "fill " << int(fill) << " row " << row;
    }
  }
}

// Decode computes one column over a task's groups, prefill up to 64 columns over another split
// of the rows: every output must come out the same.
TEST(Q4_0Groups, BitsDoNotDependOnColumnOrGroupCount) {
  if (!avx512_vnni()) GTEST_SKIP() << "CPU lacks AVX-512 VNNI (or STRATA_SIMD keeps to AVX2)";
  std::mt19937 rng(4);
  for (int64_t n : {32, 64, 416, 2048}) {
    const int n_groups = 3;
    const Problem p = make_problem(n, 8 * n_groups, rng);
    const size_t group_bytes = size_t(n / 32) * kQ4_0GroupBlockBytes;
    std::vector<float> all(size_t(kMaxColumns) * 24);
    vec_dot_q4_0_groups_avx512(n, p.grouped.data(), n_groups, p.columns.data(), p.x_stride(),
                               kMaxColumns, all.data(), 24);
    for (int c = 0; c < kMaxColumns; ++c)
      for (int g = 0; g < n_groups; ++g) {
        float one[8];
        vec_dot_q4_0_groups_avx512(n, p.grouped.data() + size_t(g) * group_bytes, 1, p.x(c),
                                   p.x_stride(), 1, one, 8);
        for (int r = 0; r < 8; ++r)
          ASSERT_EQ(std::bit_cast<uint32_t>(one[r]),
                    std::bit_cast<uint32_t>(all[size_t(c) * 24 + size_t(g) * 8 + size_t(r)]))
              << "n " << n << " column " << c << " row " << g * 8 + r;
      }
  }
}

}  // namespace
}  // namespace strata
