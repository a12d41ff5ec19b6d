// For the CUDA backend's tests: the weight formats with their reference traits, random rows in
// them (quantized from random floats by quant/'s reference quantizers), and the reference's
// converted activation bytes in the layout of activation_chunks.h.
#pragma once

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "base/fp16.h"
#include "cuda/activation_chunks.h"
#include "quant/q8_0.h"
#include "quant/q8_1.h"
#include "quant/q8_k.h"
#include "quant/quant_type.h"

namespace strata::cuda::testing {

// Every weight format the CPU reads.
inline const std::vector<QuantType>& weight_formats() {
  static const std::vector<QuantType> formats = {
      QuantType::kF32,  QuantType::kF16,    QuantType::kBF16,   QuantType::kQ8_0,
      QuantType::kQ4_0, QuantType::kQ4_1,   QuantType::kQ5_0,   QuantType::kQ5_1,
      QuantType::kIQ4_NL, QuantType::kIQ4_XS, QuantType::kQ2_K, QuantType::kQ3_K,
      QuantType::kQ4_K, QuantType::kQ5_K,   QuantType::kQ6_K};
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

}  // namespace strata::cuda::testing
