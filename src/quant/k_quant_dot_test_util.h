// Test helpers for the super-block formats' dot products, shared by the reference's tests
// (quant/k_quant_formats_test.cpp) and the CPU kernels' (cpu/kernels/k_quant_kernels_test.cpp):
// one row per format with its reference functions and decoder, random rows, the exact dot product
// of the decoded values, and the checks every dot product must pass against it.
#pragma once

#include "quant/iq4_xs.h"
#include "quant/k_quant_test_util.h"
#include "quant/q2_k.h"
#include "quant/q3_k.h"
#include "quant/q4_k.h"
#include "quant/q5_k.h"
#include "quant/q6_k.h"
#include "quant/q8_k.h"
#include "quant/quant_type.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <ostream>
#include <vector>

namespace strata::kquant_test {

struct Format {
  const char* name;
  QuantType type;
  size_t block_bytes;
  DequantizeRowFn dequantize;
  QuantizeRowFn quantize;
  VecDotFn scalar;
  RefWeight (*decode)(const uint8_t* block, int i);
  std::vector<size_t> half_fields;  // byte offsets of the fp16 scales in a block
  int levels;                       // quant levels per weight (2^bits)
  // Round trip of N(0, 1) rows: RMS error / RMS value. Each bound is the format's measured
  // value (in the comment) plus 5%: the searches are deterministic, so any change in them moves
  // the error, and a wrong level or coded scale anywhere moves it far more.
  double max_relative_rmse;
};

inline void PrintTo(const Format& format, std::ostream* os) { *os << format.name; }

template <class Block, RefWeight (*kDecode)(const Block&, int)>
inline RefWeight decode(const uint8_t* bytes, int i) {
  Block block;
  std::memcpy(&block, bytes, sizeof block);
  return kDecode(block, i);
}

inline const Format kFormats[] = {
    // Measured 0.2972: 4 levels over a 16-weight range (about 3.5 sigma / 3 = 1.2 per step,
    // uniform rounding error 0.34; the fits, scored by absolute error, do better).
    {"Q2_K",
     QuantType::kQ2_K,
     sizeof(BlockQ2_K),
     dequantize_row_q2_k,
     quantize_row_q2_k,
     vec_dot_q2_k_scalar,
     decode<BlockQ2_K, ref_q2_k>,
     {offsetof(BlockQ2_K, d), offsetof(BlockQ2_K, dmin)},
     4,
     0.312},
    // Measured 0.1516: 8 levels, -4..3 steps, over 16-weight sub-blocks.
    {"Q3_K",
     QuantType::kQ3_K,
     sizeof(BlockQ3_K),
     dequantize_row_q3_k,
     quantize_row_q3_k,
     vec_dot_q3_k_scalar,
     decode<BlockQ3_K, ref_q3_k>,
     {offsetof(BlockQ3_K, d)},
     8,
     0.159},
    // Measured 0.0717: 16 levels over a 32-weight range (about 4.1 sigma / 15 = 0.27 per step,
    // uniform rounding error step / sqrt(12) = 0.079; the least-squares fits do better).
    {"Q4_K",
     QuantType::kQ4_K,
     sizeof(BlockQ4_K),
     dequantize_row_q4_k,
     quantize_row_q4_k,
     vec_dot_q4_k_scalar,
     decode<BlockQ4_K, ref_q4_k>,
     {offsetof(BlockQ4_K, d), offsetof(BlockQ4_K, dmin)},
     16,
     0.0753},
    // Measured 0.0364: 32 levels, half the Q4_K step.
    {"Q5_K",
     QuantType::kQ5_K,
     sizeof(BlockQ5_K),
     dequantize_row_q5_k,
     quantize_row_q5_k,
     vec_dot_q5_k_scalar,
     decode<BlockQ5_K, ref_q5_k>,
     {offsetof(BlockQ5_K, d), offsetof(BlockQ5_K, dmin)},
     32,
     0.0382},
    // Measured 0.0178: 64 levels, -32..31 steps, over 16-weight sub-blocks.
    {"Q6_K",
     QuantType::kQ6_K,
     sizeof(BlockQ6_K),
     dequantize_row_q6_k,
     quantize_row_q6_k,
     vec_dot_q6_k_scalar,
     decode<BlockQ6_K, ref_q6_k>,
     {offsetof(BlockQ6_K, d)},
     64,
     0.0187},
    // Measured 0.0769: 16 non-linear levels, denser near zero where Gaussian weights crowd,
    // with a 6-bit scale per 32 weights and no minimum (0.25 bit per weight less than Q4_K).
    {"IQ4_XS",
     QuantType::kIQ4_XS,
     sizeof(BlockIQ4_XS),
     dequantize_row_iq4_xs,
     quantize_row_iq4_xs,
     vec_dot_iq4_xs_scalar,
     decode<BlockIQ4_XS, ref_iq4_xs>,
     {offsetof(BlockIQ4_XS, d)},
     16,
     0.0807},
};

// Random weight rows: random bytes hit every quant, scale and minimum code; the fp16 scales are
// finite and of realistic size so that no block's terms swamp the others'.
inline std::vector<uint8_t> random_weights(const Format& format, int64_t n_blocks, size_t offset,
                                           std::mt19937& rng) {
  std::vector<uint8_t> bytes(offset + size_t(n_blocks) * format.block_bytes);
  fill_random_bytes(bytes.data(), bytes.size(), rng);
  for (int64_t b = 0; b < n_blocks; ++b) {
    for (size_t field : format.half_fields) {
      const fp16_t half = random_scale_half(rng);
      std::memcpy(&bytes[offset + size_t(b) * format.block_bytes + field], &half, 2);
    }
  }
  return bytes;
}

// Q8_K columns of n activations each, column c at offset + c * stride.
inline std::vector<uint8_t> random_columns(int64_t n, int n_cols, size_t offset, size_t stride,
                                           std::mt19937& rng) {
  std::vector<uint8_t> bytes(offset + size_t(n_cols) * stride);
  fill_random_bytes(bytes.data(), bytes.size(), rng);  // the gaps between columns are garbage
  for (int c = 0; c < n_cols; ++c)
    quantize_row_q8_k(random_activations(n, rng).data(), &bytes[offset + size_t(c) * stride], n);
  return bytes;
}

struct ExactDot {
  double value;      // the dot product of the decoded weights and activations, exactly
  double magnitude;  // sum of |terms|, what float rounding errors scale with
};

inline ExactDot exact_dot(const Format& format, const uint8_t* w, const uint8_t* x, int64_t n) {
  ExactDot dot = {0, 0};
  for (int64_t b = 0; b < n / 256; ++b) {
    BlockQ8_K xb;
    std::memcpy(&xb, x + b * sizeof(BlockQ8_K), sizeof xb);
    for (int i = 0; i < 256; ++i) {
      const RefWeight weight = format.decode(w + size_t(b) * format.block_bytes, i);
      const double activation = double(xb.d) * xb.qs[i];
      dot.value += (weight.scaled - weight.offset) * activation;
      dot.magnitude +=
          (std::fabs(weight.scaled) + std::fabs(weight.offset)) * std::fabs(activation);
    }
  }
  return dot;
}

// Both kernels sum exact integers per super-block, then round a few times per super-block (the
// fp16 * float scale product, the int -> float conversion, the product, the accumulation) and
// once more per lane in the final sums: for the 32 super-blocks used here that is under 40
// roundings of float epsilon (6e-8), about 2.4e-6 of the magnitude. A mis-decoded sub-block
// (16 of 8192 terms) moves the result by about 1e-2 of the magnitude.
inline constexpr double kDotRelativeTolerance = 5e-6;

inline void check_vec_dot(const Format& format, VecDotFn kernel, const char* kernel_name) {
  std::mt19937 rng(1234);
  for (int64_t n_blocks : {1, 2, 5, 32}) {
    const int64_t n = 256 * n_blocks;
    const size_t row_bytes = size_t(n_blocks) * sizeof(BlockQ8_K);
    for (int n_cols = 1; n_cols <= 9; ++n_cols) {
      // Misaligned weights (offset 1) and columns (offset 1, odd stride with a gap).
      const auto w = random_weights(format, n_blocks, 1, rng);
      const size_t stride = row_bytes + 37;
      const auto x = random_columns(n, n_cols, 1, stride, rng);
      std::vector<float> out(static_cast<size_t>(n_cols), -1.0f);
      kernel(n, &w[1], &x[1], stride, n_cols, out.data());
      for (int c = 0; c < n_cols; ++c) {
        const ExactDot exact = exact_dot(format, &w[1], &x[1 + size_t(c) * stride], n);
        EXPECT_NEAR(out[size_t(c)], exact.value, kDotRelativeTolerance * exact.magnitude)
            << kernel_name << " n=" << n << " n_cols=" << n_cols << " column " << c;
      }
    }
  }
}

// Worst cases for the integer sums: every byte of the weights one pattern (all-extreme quants,
// scale codes and minimum codes, e.g. IQ4_XS 0x00 is -127 * (0 - 32) everywhere) with fp16
// scales 1, against activations of all +127, all -127 and alternating signs.
inline void check_extremes(const Format& format, VecDotFn kernel, const char* kernel_name) {
  const int64_t n_blocks = 8, n = 256 * n_blocks;
  const size_t stride = size_t(n_blocks) * sizeof(BlockQ8_K);
  std::vector<uint8_t> x(3 * stride);
  for (int c = 0; c < 3; ++c) {
    for (int64_t b = 0; b < n_blocks; ++b) {
      BlockQ8_K block;
      block.d = 1.0f;
      for (int j = 0; j < 256; ++j)
        block.qs[j] = int8_t(c == 0 ? 127 : c == 1 ? -127 : j % 2 ? 127 : -127);
      for (int g = 0; g < 16; ++g) {
        int sum = 0;
        for (int j = 0; j < 16; ++j) sum += block.qs[16 * g + j];
        block.bsums[g] = int16_t(sum);
      }
      std::memcpy(&x[size_t(c) * stride + size_t(b) * sizeof block], &block, sizeof block);
    }
  }
  for (int pattern : {0x00, 0xff, 0x80, 0x7f, 0xaa, 0x55}) {
    std::vector<uint8_t> w(size_t(n_blocks) * format.block_bytes, uint8_t(pattern));
    for (int64_t b = 0; b < n_blocks; ++b) {
      for (size_t field : format.half_fields) {
        const fp16_t one = fp32_to_fp16(1.0f);
        std::memcpy(&w[size_t(b) * format.block_bytes + field], &one, 2);
      }
    }
    float out[3];
    kernel(n, w.data(), x.data(), stride, 3, out);
    for (int c = 0; c < 3; ++c) {
      const ExactDot exact = exact_dot(format, w.data(), &x[size_t(c) * stride], n);
      EXPECT_NEAR(out[c], exact.value, kDotRelativeTolerance * exact.magnitude)
          << kernel_name << " pattern " << pattern << " column " << c;
    }
  }
}

// A column's result must not depend on the columns computed with it (batching for prefill must
// not change a token's logits): column c inside a group of 7 equals column c alone, bit for bit.
inline void check_column_independence(const Format& format, VecDotFn kernel) {
  std::mt19937 rng(99);
  const int64_t n_blocks = 8, n = 256 * n_blocks;
  const size_t stride = size_t(n_blocks) * sizeof(BlockQ8_K);
  const auto w = random_weights(format, n_blocks, 0, rng);
  const auto x = random_columns(n, 7, 0, stride, rng);
  float together[7];
  kernel(n, w.data(), x.data(), stride, 7, together);
  for (int c = 0; c < 7; ++c) {
    float alone;
    kernel(n, w.data(), &x[size_t(c) * stride], stride, 1, &alone);
    EXPECT_EQ(float_bits(alone), float_bits(together[c])) << "column " << c;
  }
}

}  // namespace strata::kquant_test
