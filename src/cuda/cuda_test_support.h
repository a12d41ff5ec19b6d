// For the CUDA backend's tests: the weight formats with their reference traits, random rows in
// them (quantized from random floats by quant/'s reference quantizers), and the reference's
// converted activation bytes in the layout of activation_chunks.h.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <type_traits>
#include <vector>

#include "base/fp16.h"
#include "cuda/activation_chunks.h"
#include "cuda/weight_chunks.h"
#include "quant/q8_0.h"
#include "quant/q8_1.h"
#include "quant/q8_k.h"
#include "quant/quant_type.h"

namespace strata::cuda::testing {

// Every weight format the CPU reads.
inline const std::vector<QuantType>& weight_formats() {
  static const std::vector<QuantType> formats = {
      QuantType::kF32,    QuantType::kF16,    QuantType::kBF16, QuantType::kQ8_0,
      QuantType::kQ4_0,   QuantType::kQ4_1,   QuantType::kQ5_0, QuantType::kQ5_1,
      QuantType::kIQ4_NL, QuantType::kIQ4_XS, QuantType::kQ2_K, QuantType::kQ3_K,
      QuantType::kQ4_K,   QuantType::kQ5_K,   QuantType::kQ6_K, QuantType::kQ2_0};
  return formats;
}

inline std::vector<float> random_floats(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> values(n);
  for (float& v : values) v = normal(rng);
  return values;
}

// n_rows rows of n values in `type`, from random floats.
inline std::vector<uint8_t> random_rows(QuantType type, int64_t n_rows, int64_t n, uint32_t seed) {
  const QuantTraits& traits = quant_traits(type);
  const std::vector<float> values = random_floats(size_t(n_rows * n), seed);
  std::vector<uint8_t> rows(traits.row_bytes(n) * size_t(n_rows));
  for (int64_t r = 0; r < n_rows; ++r)
    traits.quantize_row(values.data() + r * n, rows.data() + size_t(r) * traits.row_bytes(n), n);
  return rows;
}

// Activation rows as the reference converter writes them (quantize_row of the format), moved
// into the kernels' layout.
struct HostActivations {
  Format format = Format::kF32;
  int64_t n_rows = 0, n_in = 0;
  std::vector<uint8_t> values;
  std::vector<float> d, s;
  std::vector<int16_t> bsums;

  ActivationRows view() {
    ActivationRows x;
    x.format = format;
    x.n_in = n_in;
    x.values = values.data();
    x.d = d.data();
    x.s = s.data();
    x.bsums = bsums.data();
    return x;
  }
};

inline HostActivations reference_activations(QuantType type, const float* x, int64_t n_rows,
                                             int64_t n_in) {
  const QuantTraits& traits = quant_traits(type);
  std::vector<uint8_t> bytes(traits.row_bytes(n_in) * size_t(n_rows));
  for (int64_t r = 0; r < n_rows; ++r)
    traits.quantize_row(x + r * n_in, bytes.data() + size_t(r) * traits.row_bytes(n_in), n_in);
  HostActivations a;
  a.format = Format(uint32_t(type));
  a.n_rows = n_rows;
  a.n_in = n_in;
  const int64_t n_chunks = n_in / 32;
  auto chunk_values = [&](int64_t r, int64_t c, const int8_t* qs) {
    std::memcpy(a.values.data() + size_t(r * n_in + c * 32), qs, 32);
  };
  switch (type) {
    case QuantType::kQ8_0:
    case QuantType::kQ8_1:
    case QuantType::kQ8_K:
      a.values.resize(size_t(n_rows * n_in));
      a.d.resize(size_t(n_rows * n_chunks));
      a.s.resize(size_t(n_rows * n_chunks));
      a.bsums.resize(size_t(n_rows * n_in / 16));
      break;
    default:
      a.values = bytes;
  }
  for (int64_t r = 0; r < n_rows; ++r) {
    const uint8_t* row = bytes.data() + size_t(r) * traits.row_bytes(n_in);
    for (int64_t c = 0; c < n_chunks; ++c) {
      const size_t i = size_t(r * n_chunks + c);
      if (type == QuantType::kQ8_0) {
        BlockQ8_0 block;
        std::memcpy(&block, row + size_t(c) * sizeof(block), sizeof(block));
        a.d[i] = fp16_to_fp32(block.d);
        chunk_values(r, c, block.qs);
      } else if (type == QuantType::kQ8_1) {
        BlockQ8_1 block;
        std::memcpy(&block, row + size_t(c) * sizeof(block), sizeof(block));
        a.d[i] = fp16_to_fp32(block.d);
        a.s[i] = fp16_to_fp32(block.s);
        chunk_values(r, c, block.qs);
      } else if (type == QuantType::kQ8_K) {
        BlockQ8_K block;
        std::memcpy(&block, row + size_t(c / 8) * sizeof(block), sizeof(block));
        a.d[i] = block.d;
        chunk_values(r, c, block.qs + 32 * (c % 8));
        for (int half = 0; half < 2; ++half)
          a.bsums[size_t(r * n_in / 16 + 2 * c + half)] = block.bsums[2 * (c % 8) + half];
      }
    }
  }
  return a;
}

// A row's dot product adds n / 32 chunk values in float where the reference adds blocks (or
// super-blocks) in order: each order rounds differently, by at most ~n/32 float ulps of the
// sum of the terms' magnitudes.
inline constexpr double kDotTolerance = 1e-5;

// fn(F{}) with F the host form of the format struct (weight_chunks.h).
template <class Fn>
void with_host_format(QuantType type, bool grouped, Fn&& fn) {
  switch (type) {
    case QuantType::kF32:
      return fn(FormatF32{});
    case QuantType::kF16:
      return fn(FormatF16{});
    case QuantType::kBF16:
      return fn(FormatBF16{});
    case QuantType::kQ8_0:
      return fn(FormatQ8_0{});
    case QuantType::kQ4_0:
      return grouped ? fn(FormatQ4_0Grouped{}) : fn(FormatQ4_0{});
    case QuantType::kQ4_1:
      return fn(FormatQ4_1{});
    case QuantType::kQ5_0:
      return fn(FormatQ5_0{});
    case QuantType::kQ5_1:
      return fn(FormatQ5_1{});
    case QuantType::kIQ4_NL:
      return fn(FormatIQ4_NL{});
    case QuantType::kQ2_0:
      return fn(FormatQ2_0{});
    case QuantType::kIQ4_XS:
      return fn(FormatIQ4_XS{});
    case QuantType::kQ2_K:
      return fn(FormatQ2_K{});
    case QuantType::kQ3_K:
      return fn(FormatQ3_K{});
    case QuantType::kQ4_K:
      return fn(FormatQ4_K{});
    case QuantType::kQ5_K:
      return fn(FormatQ5_K{});
    case QuantType::kQ6_K:
      return fn(FormatQ6_K{});
    default:
      ADD_FAILURE() << "not a weight format";
  }
}

template <class F>
float value_of(const decltype(F::load(nullptr, 0, 0, 0))& chunk, int i) {
  if constexpr (std::is_same_v<decltype(F::load(nullptr, 0, 0, 0)), FloatChunk>) {
    return chunk.v[i];
  } else {
    return chunk_value<F>(chunk, i);
  }
}

// A row's dot product from the kernels' format code: chunk shares added in order (integer
// formats) or products in order (float formats), with the sum of their magnitudes.
template <class F>
float row_dot(const uint8_t* rows, int64_t row, size_t row_bytes, int64_t n,
              const ActivationRows& x, int64_t x_row, double* magnitude) {
  float sum = 0.0f;
  *magnitude = 0;
  if constexpr (std::is_same_v<decltype(F::load(nullptr, 0, 0, 0)), FloatChunk>) {
    for (int64_t i = 0; i < n; ++i) {
      const float product = F::value(rows, row, row_bytes, i) * load_float_value(x, x_row, i);
      sum += product;
      *magnitude += std::fabs(double(product));
    }
  } else {
    for (int64_t c = 0; c < n / kChunkWeights; ++c) {
      const float part = chunk_dot<F::kActivation>(F::load(rows, row, row_bytes, c),
                                                   load_int_activation(x, x_row, c));
      sum += part;
      *magnitude += std::fabs(double(part));
    }
  }
  return sum;
}

}  // namespace strata::cuda::testing
