// Dot products of the dense and 32-weight block formats: scalar reference against a float64
// dot of the dequantized values, AVX2 kernels against the scalar reference, on random rows
// (random block bytes cover every code) of many lengths, 1 to 9 columns, misaligned and
// strided; the AVX2 kernels' promise that a column's bits do not depend on its group; and the
// AVX-512 rows kernel's promise of the AVX2 one's bits.
#include "quant/legacy_test_util.h"

#include "base/cpu_features.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>

namespace strata {
namespace {

using legacy_test::Format;

// Rounding: a float sum of k terms in any order is within k * 2^-24 * sum|terms| of the exact
// sum (each addition rounds by half an ulp of a partial sum bounded by sum|terms|). The kernels
// add one product per block (per 8 elements for float formats) plus a fixed tail of
// horizontal-sum and scale roundings, counted by kFixedRoundings.
constexpr double kUnitRoundoff = 0x1p-24;
constexpr int64_t kFixedRoundings = 16;
// The Q4_1/Q5_1 kernels multiply the minimum by Q8_1's s = fp16(d * sum(q)), not by the sum of
// the dequantized activations fp16(d) * sum(q): s is rounded to 11 significant bits (relative
// error 2^-11, or 2^-25 absolute below fp16's normal range) and is made from the unrounded d,
// which differs from fp16(d) by up to another 2^-11.
constexpr double kActivationSumRelativeError = 2 * 0x1p-11;
constexpr double kHalfSubnormalRounding = 0x1p-25;
constexpr int kMaxColumns = 9;

std::vector<int64_t> lengths(const Format& f) {
  if (f.block_size == 32) {
    std::vector<int64_t> out;
    for (int64_t n_blocks : {1, 2, 3, 4, 5, 7, 8, 9, 16, 31, 64, 129}) out.push_back(32 * n_blocks);
    return out;
  }
  std::vector<int64_t> out;
  for (int64_t n = 1; n <= 40; ++n) out.push_back(n);
  for (int64_t n : {63, 64, 65, 127, 128, 129, 1000, 4099}) out.push_back(n);
  return out;
}

// One weight row and kMaxColumns activation rows, each stored at an odd address; the columns
// are `stride` bytes apart, more than a row, so reading past a row's end shows.
struct Problem {
  const Format* weights_format;
  const Format* activation_format;
  int64_t n = 0;
  size_t stride = 0;
  std::vector<uint8_t> weights;  // weights.data() + 1 is the row
  std::vector<uint8_t> columns;  // columns.data() + 1 is column 0
  const uint8_t* w() const { return weights.data() + 1; }
  const uint8_t* x(int c = 0) const { return columns.data() + 1 + size_t(c) * stride; }
};

Problem make_problem(const Format& f, int64_t n, std::mt19937& rng) {
  Problem p{&f, &legacy_test::format(f.dot_type), n, 0, {}, {}};
  const auto row = legacy_test::random_weights(f, n, rng);
  p.weights.assign(1, 0xee);
  p.weights.insert(p.weights.end(), row.begin(), row.end());
  p.stride = p.activation_format->row_bytes(n) + 7;
  p.columns.assign(1 + kMaxColumns * p.stride, 0xee);
  for (int c = 0; c < kMaxColumns; ++c) {
    const auto column = legacy_test::random_activations(*p.activation_format, n, rng);
    std::memcpy(p.columns.data() + 1 + c * p.stride, column.data(), column.size());
  }
  return p;
}

struct Reference {
  double dot = 0.0;
  double tolerance = 0.0;  // for one float computation against the exact dot
};

// float64 dot of the dequantized rows, and how far a correct float kernel may be from it.
Reference reference(const Problem& p, int c) {
  const auto w = legacy_test::dequantize(*p.weights_format, p.w(), p.n);
  const auto x = legacy_test::dequantize(*p.activation_format, p.x(c), p.n);
  double dot = 0.0, abs_sum = 0.0;
  for (int64_t i = 0; i < p.n; ++i) {
    dot += double(w[i]) * double(x[i]);
    abs_sum += std::fabs(double(w[i]) * double(x[i]));
  }
  const bool blocks = p.weights_format->block_size == 32;
  const int64_t n_roundings = (blocks ? p.n / 32 : p.n / 8) + kFixedRoundings;
  double tolerance = double(n_roundings) * kUnitRoundoff * abs_sum;
  if (p.activation_format->type == QuantType::kQ8_1) {
    for (int64_t b = 0; b < p.n / 32; ++b) {
      BlockQ8_1 xb;
      BlockQ4_1 wb;  // Q4_1 and Q5_1 both start with d and m
      std::memcpy(&xb, p.x(c) + b * sizeof(BlockQ8_1), sizeof xb);
      std::memcpy(&wb, p.w() + b * p.weights_format->block_bytes, 4);
      double exact_s = 0.0;
      for (int j = 0; j < 32; ++j) exact_s += double(x[b * 32 + j]);
      tolerance += std::fabs(fp16_to_fp32(wb.m)) *
                   (std::fabs(exact_s) * kActivationSumRelativeError + kHalfSubnormalRounding);
    }
  }
  return {dot, tolerance};
}

void run_all_columns(VecDotFn dot, const Problem& p, int n_cols, float* out) {
  dot(p.n, p.w(), p.x(), p.stride, n_cols, out);
}

TEST(LegacyVecDot, ScalarMatchesFloat64Dot) {
  std::mt19937 rng(10);
  for (const auto& f : legacy_test::weight_formats()) {
    for (int64_t n : lengths(f)) {
      const Problem p = make_problem(f, n, rng);
      float out[kMaxColumns];
      run_all_columns(f.dot_scalar, p, kMaxColumns, out);
      for (int c = 0; c < kMaxColumns; ++c) {
        const Reference want = reference(p, c);
        EXPECT_NEAR(out[c], want.dot, want.tolerance) << f.name << " n=" << n << " column " << c;
      }
    }
  }
}

TEST(LegacyVecDot, Avx2MatchesScalarForEveryColumnCount) {
  if (!legacy_test::cpu_has_avx2()) GTEST_SKIP() << "CPU lacks AVX2/FMA/F16C";
  std::mt19937 rng(11);
  for (const auto& f : legacy_test::weight_formats()) {
    for (int64_t n : lengths(f)) {
      const Problem p = make_problem(f, n, rng);
      float scalar[kMaxColumns];
      run_all_columns(f.dot_scalar, p, kMaxColumns, scalar);
      for (int n_cols = 1; n_cols <= kMaxColumns; ++n_cols) {
        float avx2[kMaxColumns + 1];
        avx2[n_cols] = 12345.0f;  // a kernel writing past n_cols shows here
        run_all_columns(f.dot_avx2, p, n_cols, avx2);
        EXPECT_EQ(avx2[n_cols], 12345.0f) << f.name << " wrote past column " << n_cols;
        for (int c = 0; c < n_cols; ++c) {
          // Both are float computations within tolerance of the exact dot.
          const Reference want = reference(p, c);
          EXPECT_NEAR(avx2[c], scalar[c], 2 * want.tolerance)
              << f.name << " n=" << n << " n_cols=" << n_cols << " column " << c;
          EXPECT_NEAR(avx2[c], want.dot, want.tolerance)
              << f.name << " n=" << n << " n_cols=" << n_cols << " column " << c;
        }
      }
    }
  }
}

// A column's result is the same bits whether it is computed alone, in a group of 4, or in the
// remainder group, and whatever the alignment of the rows.
TEST(LegacyVecDot, Avx2ColumnBitsDoNotDependOnGrouping) {
  if (!legacy_test::cpu_has_avx2()) GTEST_SKIP() << "CPU lacks AVX2/FMA/F16C";
  std::mt19937 rng(12);
  for (const auto& f : legacy_test::weight_formats()) {
    for (int64_t n : lengths(f)) {
      const Problem p = make_problem(f, n, rng);
      for (int n_cols : {7, kMaxColumns}) {
        float grouped[kMaxColumns];
        run_all_columns(f.dot_avx2, p, n_cols, grouped);
        for (int c = 0; c < n_cols; ++c) {
          float alone;
          f.dot_avx2(n, p.w(), p.x(c), p.stride, 1, &alone);
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
      f.dot_avx2(n, p.w(), p.x(2), p.stride, 1, &misaligned);
      f.dot_avx2(n, w_aligned.data(), x_aligned.data(), x_bytes, 1, &aligned);
      EXPECT_EQ(std::bit_cast<uint32_t>(misaligned), std::bit_cast<uint32_t>(aligned))
          << f.name << " n=" << n;
    }
  }
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
      const auto row = legacy_test::random_weights(f, n, rng);
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
  if (!legacy_test::cpu_has_avx2()) GTEST_SKIP() << "CPU lacks AVX2/FMA/F16C";
  std::mt19937 rng(13);
  int checked_formats = 0;
  for (const auto& f : legacy_test::weight_formats()) {
    if (!f.dot_rows_avx2) continue;
    ++checked_formats;
    for_each_rows_case(f, rng, [&](int64_t n, const uint8_t* matrix, size_t row_bytes,
                                   int n_rows, const Problem& p) {
      float rows[kMaxRows + 1];
      rows[n_rows] = 12345.0f;
      f.dot_rows_avx2(n, matrix, row_bytes, n_rows, p.x(), rows);
      EXPECT_EQ(rows[n_rows], 12345.0f) << f.name << " wrote past row " << n_rows;
      for (int r = 0; r < n_rows; ++r) {
        float alone;
        f.dot_avx2(n, matrix + r * row_bytes, p.x(), p.stride, 1, &alone);
        EXPECT_EQ(std::bit_cast<uint32_t>(alone), std::bit_cast<uint32_t>(rows[r]))
            << f.name << " n=" << n << " row " << r << " of " << n_rows;
      }
    });
  }
  EXPECT_EQ(checked_formats, 6);
}

// The AVX-512 rows kernels promise the AVX2 rows kernels' bits (block32_avx512.h,
// q8_0_avx512.cpp), for every row count and length (odd block counts end in a half pair, odd row
// counts in a half row pair), and write nothing past the end.
TEST(LegacyVecDot, Avx512RowsKernelMatchesAvx2BitForBit) {
  if (!avx512_vnni()) GTEST_SKIP() << "CPU lacks AVX-512 VNNI (or STRATA_SIMD keeps to AVX2)";
  std::mt19937 rng(17);
  int checked_formats = 0;
  for (const auto& f : legacy_test::weight_formats()) {
    if (!f.dot_rows_avx512) continue;
    ++checked_formats;
    for_each_rows_case(f, rng, [&](int64_t n, const uint8_t* matrix, size_t row_bytes,
                                   int n_rows, const Problem& p) {
      float want[kMaxRows], got[kMaxRows + 1];
      got[n_rows] = 12345.0f;
      f.dot_rows_avx2(n, matrix, row_bytes, n_rows, p.x(), want);
      f.dot_rows_avx512(n, matrix, row_bytes, n_rows, p.x(), got);
      EXPECT_EQ(got[n_rows], 12345.0f) << f.name << " wrote past row " << n_rows;
      for (int r = 0; r < n_rows; ++r)
        EXPECT_EQ(std::bit_cast<uint32_t>(want[r]), std::bit_cast<uint32_t>(got[r]))
            << f.name << " n=" << n << " row " << r << " of " << n_rows;
    });
  }
  EXPECT_EQ(checked_formats, 2);
}

// Extreme codes: every weight at its largest magnitude against activations of 127 and -127,
// where the int8 products and their int16 pair sums are largest.
TEST(LegacyVecDot, Avx2ExtremeQuantsDoNotOverflow) {
  if (!legacy_test::cpu_has_avx2()) GTEST_SKIP() << "CPU lacks AVX2/FMA/F16C";
  for (const auto& f : legacy_test::weight_formats()) {
    if (f.block_size != 32) continue;
    const int64_t n = 32 * 5;
    for (uint8_t fill : {0x00, 0xff, 0x80, 0x7f}) {
      std::mt19937 rng(13);
      auto row = legacy_test::random_weights(f, n, rng);
      const int quants_start = f.fields.m_offset >= 0 ? 4 : 2;
      for (size_t b = 0; b < row.size() / f.block_bytes; ++b)
        std::memset(row.data() + b * f.block_bytes + quants_start, fill,
                    f.block_bytes - quants_start);
      const Format& a = legacy_test::format(f.dot_type);
      std::vector<float> x_values(n);
      for (int64_t i = 0; i < n; ++i) x_values[i] = (i % 3 == 0) ? -1.0f : 1.0f;
      std::vector<uint8_t> x(a.row_bytes(n));
      a.quantize(x_values.data(), x.data(), n);
      Problem p{&f, &a, n, a.row_bytes(n), {}, {}};
      p.weights.assign(1, 0);
      p.weights.insert(p.weights.end(), row.begin(), row.end());
      p.columns.assign(1, 0);
      p.columns.insert(p.columns.end(), x.begin(), x.end());
      float scalar, avx2;
      f.dot_scalar(n, p.w(), p.x(), p.stride, 1, &scalar);
      f.dot_avx2(n, p.w(), p.x(), p.stride, 1, &avx2);
      const Reference want = reference(p, 0);
      EXPECT_NEAR(scalar, want.dot, want.tolerance) << f.name << " fill " << int(fill);
      EXPECT_NEAR(avx2, want.dot, want.tolerance) << f.name << " fill " << int(fill);
      if (f.dot_rows_avx512 && avx512_vnni()) {
        float avx512;
        f.dot_rows_avx512(n, p.w(), f.row_bytes(n), 1, p.x(), &avx512);
        EXPECT_EQ(std::bit_cast<uint32_t>(avx2), std::bit_cast<uint32_t>(avx512))
            << f.name << " fill " << int(fill);
      }
    }
  }
}

}  // namespace
}  // namespace strata
