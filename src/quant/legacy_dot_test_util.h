// Test helpers for the dot products of the dense and 32-weight block formats, shared by the
// reference's tests (quant/legacy_vec_dot_test.cpp) and the CPU kernels' (cpu/kernels/): random
// problems of many lengths with misaligned, strided columns, and the float64 dot of the
// dequantized values with the rounding bound a correct float computation stays within.
#pragma once

#include "quant/legacy_test_util.h"

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace strata::legacy_test {

// Rounding: a float sum of k terms in any order is within k * 2^-24 * sum|terms| of the exact
// sum (each addition rounds by half an ulp of a partial sum bounded by sum|terms|). The kernels
// add one product per block (per 8 elements for float formats) plus a fixed tail of
// horizontal-sum and scale roundings, counted by kFixedRoundings.
inline constexpr double kUnitRoundoff = 0x1p-24;
inline constexpr int64_t kFixedRoundings = 16;
// The Q4_1/Q5_1 kernels multiply the minimum by Q8_1's s = fp16(d * sum(q)), not by the sum of
// the dequantized activations fp16(d) * sum(q): s is rounded to 11 significant bits (relative
// error 2^-11, or 2^-25 absolute below fp16's normal range) and is made from the unrounded d,
// which differs from fp16(d) by up to another 2^-11.
inline constexpr double kActivationSumRelativeError = 2 * 0x1p-11;
inline constexpr double kHalfSubnormalRounding = 0x1p-25;
inline constexpr int kMaxColumns = 9;

inline std::vector<int64_t> lengths(const Format& f) {
  if (f.block_size >= 32) {
    std::vector<int64_t> out;
    for (int64_t n_blocks : {1, 2, 3, 4, 5, 7, 8, 9, 16, 31, 64, 129})
      out.push_back(f.block_size * n_blocks);
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

inline Problem make_problem(const Format& f, int64_t n, std::mt19937& rng) {
  Problem p{&f, &format(f.dot_type), n, 0, {}, {}};
  const auto row = random_weights(f, n, rng);
  p.weights.assign(1, 0xee);
  p.weights.insert(p.weights.end(), row.begin(), row.end());
  p.stride = p.activation_format->row_bytes(n) + 7;
  p.columns.assign(1 + kMaxColumns * p.stride, 0xee);
  for (int c = 0; c < kMaxColumns; ++c) {
    const auto column = random_activations(*p.activation_format, n, rng);
    std::memcpy(p.columns.data() + 1 + c * p.stride, column.data(), column.size());
  }
  return p;
}

struct Reference {
  double dot = 0.0;
  double tolerance = 0.0;  // for one float computation against the exact dot
};

// float64 dot of the dequantized rows, and how far a correct float kernel may be from it.
inline Reference reference(const Problem& p, int c) {
  const auto w = dequantize(*p.weights_format, p.w(), p.n);
  const auto x = dequantize(*p.activation_format, p.x(c), p.n);
  double dot = 0.0, abs_sum = 0.0;
  for (int64_t i = 0; i < p.n; ++i) {
    dot += double(w[i]) * double(x[i]);
    abs_sum += std::fabs(double(w[i]) * double(x[i]));
  }
  // One product per 32 weights for the block formats (two per Q2_0 block).
  const bool blocks = p.weights_format->block_size >= 32;
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

inline void run_all_columns(VecDotFn dot, const Problem& p, int n_cols, float* out) {
  dot(p.n, p.w(), p.x(), p.stride, n_cols, out);
}

// Calls check(f, p) with a problem drawn from rng for every weight format f and length of f.
template <class Check>
void for_each_problem(std::mt19937& rng, Check&& check) {
  for (const auto& f : weight_formats())
    for (int64_t n : lengths(f)) check(f, make_problem(f, n, rng));
}

// Every weight's quant bytes set to `fill` (its largest magnitude for 0x00 and 0xff) in a row of
// 5 blocks, against activations of 127 and -127, where the int8 products and their int16 pair
// sums are largest. REQUIRES: f.block_size >= 32.
inline Problem extreme_problem(const Format& f, uint8_t fill) {
  const int64_t n = f.block_size * 5;
  std::mt19937 rng(13);
  auto row = random_weights(f, n, rng);
  const int quants_start = f.fields.m_offset >= 0 ? 4 : 2;
  for (size_t b = 0; b < row.size() / f.block_bytes; ++b)
    std::memset(row.data() + b * f.block_bytes + quants_start, fill, f.block_bytes - quants_start);
  const Format& a = format(f.dot_type);
  std::vector<float> x_values(n);
  for (int64_t i = 0; i < n; ++i) x_values[i] = (i % 3 == 0) ? -1.0f : 1.0f;
  std::vector<uint8_t> x(a.row_bytes(n));
  a.quantize(x_values.data(), x.data(), n);
  Problem p{&f, &a, n, a.row_bytes(n), {}, {}};
  p.weights.assign(1, 0);
  p.weights.insert(p.weights.end(), row.begin(), row.end());
  p.columns.assign(1, 0);
  p.columns.insert(p.columns.end(), x.begin(), x.end());
  return p;
}

}  // namespace strata::legacy_test
