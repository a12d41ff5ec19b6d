// Test helpers for the dense and 32-weight block formats, and for Q2_0 (64-weight blocks against
// the same 32-weight activation blocks) where dot products are tested: one row per format (the
// tests call the format functions directly, not through quant_traits, so they do not depend on the
// other formats of the library), random rows with sane scales, and dequantization into doubles.
#pragma once

#include "base/fp16.h"
#include "quant/bf16.h"
#include "quant/f16.h"
#include "quant/f32.h"
#include "quant/iq4_nl.h"
#include "quant/q2_0.h"
#include "quant/q4_0.h"
#include "quant/q4_1.h"
#include "quant/q5_0.h"
#include "quant/q5_1.h"
#include "quant/q8_0.h"
#include "quant/q8_1.h"
#include "quant/quant_type.h"

#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace strata::legacy_test {

// Where a block keeps its fp16 fields; random block bytes get sane values written there, as
// random bits would make scales of NaN, infinity or 65504.
struct ScaleFields {
  int d_offset = -1;
  int m_offset = -1;  // the minimum (Q4_1, Q5_1) or the activation sum s (Q8_1)
};

struct Format {
  std::string name;
  QuantType type;
  int64_t block_size;
  size_t block_bytes;
  ScaleFields fields;
  QuantType dot_type;  // the activations' format
  DequantizeRowFn dequantize;
  QuantizeRowFn quantize;
  VecDotFn dot_scalar;  // nullptr for Q8_1
  size_t row_bytes(int64_t n) const { return size_t(n / block_size) * block_bytes; }
};

inline const Format kFormats[] = {
    {"f32",
     QuantType::kF32,
     1,
     4,
     {},
     QuantType::kF32,
     dequantize_row_f32,
     quantize_row_f32,
     vec_dot_f32_scalar},
    {"f16",
     QuantType::kF16,
     1,
     2,
     {},
     QuantType::kF16,
     dequantize_row_f16,
     quantize_row_f16,
     vec_dot_f16_scalar},
    {"bf16",
     QuantType::kBF16,
     1,
     2,
     {},
     QuantType::kBF16,
     dequantize_row_bf16,
     quantize_row_bf16,
     vec_dot_bf16_scalar},
    {"q8_0",
     QuantType::kQ8_0,
     32,
     34,
     {0, -1},
     QuantType::kQ8_0,
     dequantize_row_q8_0,
     quantize_row_q8_0,
     vec_dot_q8_0_scalar},
    {"q8_1",
     QuantType::kQ8_1,
     32,
     36,
     {0, 2},
     QuantType::kQ8_1,
     dequantize_row_q8_1,
     quantize_row_q8_1,
     nullptr},
    {"q4_0",
     QuantType::kQ4_0,
     32,
     18,
     {0, -1},
     QuantType::kQ8_0,
     dequantize_row_q4_0,
     quantize_row_q4_0,
     vec_dot_q4_0_scalar},
    {"q4_1",
     QuantType::kQ4_1,
     32,
     20,
     {0, 2},
     QuantType::kQ8_1,
     dequantize_row_q4_1,
     quantize_row_q4_1,
     vec_dot_q4_1_scalar},
    {"q5_0",
     QuantType::kQ5_0,
     32,
     22,
     {0, -1},
     QuantType::kQ8_0,
     dequantize_row_q5_0,
     quantize_row_q5_0,
     vec_dot_q5_0_scalar},
    {"q5_1",
     QuantType::kQ5_1,
     32,
     24,
     {0, 2},
     QuantType::kQ8_1,
     dequantize_row_q5_1,
     quantize_row_q5_1,
     vec_dot_q5_1_scalar},
    {"iq4_nl",
     QuantType::kIQ4_NL,
     32,
     18,
     {0, -1},
     QuantType::kQ8_0,
     dequantize_row_iq4_nl,
     quantize_row_iq4_nl,
     vec_dot_iq4_nl_scalar},
};

inline const Format& format(QuantType type) {
  for (const auto& f : kFormats)
    if (f.type == type) return f;
  std::abort();
}

// Q2_0 has its own quantizer tests (q2_0_test.cpp); its dot products are tested with the
// others'.
inline const Format kQ2_0Format = {
    "q2_0",           QuantType::kQ2_0,    kQ2_0BlockSize,    sizeof(BlockQ2_0),  {0, -1},
    QuantType::kQ8_0, dequantize_row_q2_0, quantize_row_q2_0, vec_dot_q2_0_scalar};

// The weight formats: those with dot products, Q2_0 among them.
inline std::vector<Format> weight_formats() {
  std::vector<Format> out;
  for (const auto& f : kFormats)
    if (f.dot_scalar) out.push_back(f);
  out.push_back(kQ2_0Format);
  return out;
}

inline void put_half(uint8_t* p, float value) {
  const fp16_t h = fp32_to_fp16(value);
  std::memcpy(p, &h, 2);
}

// A row of n weights: random bytes for the quants (covering every code), scales uniform in
// [-1, 1] and minimums in [-4, 4]; for float formats, values in [-1, 1].
inline std::vector<uint8_t> random_weights(const Format& f, int64_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  std::vector<uint8_t> row(f.row_bytes(n));
  if (f.block_size == 1) {
    std::vector<float> values(static_cast<size_t>(n));
    for (auto& v : values) v = unit(rng);
    f.quantize(values.data(), row.data(), n);
    return row;
  }
  for (auto& byte : row) byte = uint8_t(rng());
  for (size_t b = 0; b < row.size() / f.block_bytes; ++b) {
    uint8_t* block = row.data() + b * f.block_bytes;
    put_half(block + f.fields.d_offset, unit(rng));
    if (f.fields.m_offset >= 0) put_half(block + f.fields.m_offset, 4.0f * unit(rng));
  }
  return row;
}

// A row of n activations in format `f`: Gaussian floats with a few outliers, as activations
// have, converted with the format's quantizer.
inline std::vector<uint8_t> random_activations(const Format& f, int64_t n, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> values(static_cast<size_t>(n));
  for (auto& v : values) v = normal(rng) * (rng() % 16 == 0 ? 8.0f : 1.0f);
  std::vector<uint8_t> row(f.row_bytes(n));
  f.quantize(values.data(), row.data(), n);
  return row;
}

inline std::vector<float> dequantize(const Format& f, const uint8_t* row, int64_t n) {
  std::vector<float> out(static_cast<size_t>(n));
  f.dequantize(row, out.data(), n);
  return out;
}

// A row of n floats times `scale`: kind 0 Gaussian, 1 uniform in [-1, 1], 2 Gaussian with
// 1-in-32 outliers of 30 sigma, 3 all of one sign (uniform in [2, 4]).
inline std::vector<float> random_row(int64_t n, float scale, int kind, std::mt19937& rng) {
  std::normal_distribution<float> normal;
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(n));
  for (auto& v : x) {
    switch (kind) {
      case 0:
        v = normal(rng);
        break;
      case 1:
        v = uniform(rng);
        break;
      case 2:
        v = normal(rng) * (rng() % 32 == 0 ? 30.0f : 1.0f);
        break;  // outliers
      default:
        v = uniform(rng) + 3.0f;
        break;  // all one sign
    }
    v *= scale;
  }
  return x;
}

// Activations that exercise every path of the activation quantizers: each magnitude from 1e-38
// to 1e30 in each kind of row, exact ties, an infinity, an all-subnormal block and a zero block.
inline std::vector<float> activation_test_row(std::mt19937& rng) {
  std::vector<float> x;
  for (float scale : {1.0f, 1e-3f, 1e4f, 1e-30f, 1e30f, 1e-38f})
    for (int kind = 0; kind < 4; ++kind) {
      const auto part = random_row(32 * 8, scale, kind, rng);
      x.insert(x.end(), part.begin(), part.end());
    }
  // Exact ties: with max 127 the multiplier is 1, so k + 0.5 must round to even.
  for (int k = 0; k < 31; ++k) x.push_back(float(k) - 15.5f);
  x.push_back(127.0f);
  // An infinity, an all-subnormal block and a zero block.
  for (int j = 0; j < 32; ++j) x.push_back(j == 3 ? INFINITY : 1.0f);
  for (int j = 0; j < 32; ++j) x.push_back(std::bit_cast<float>(uint32_t(j + 1)));
  x.insert(x.end(), 32, 0.0f);
  return x;
}

}  // namespace strata::legacy_test
