// The CUDA kernels' format code, compiled for the host: every weight format's chunks against
// quant/'s reference dequantizers (bit for bit) and dot products (to float rounding), and the
// converters' arithmetic against the reference converters (bit for bit). No GPU needed.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "cpu/kernels/q4_0_groups.h"
#include "cuda/activation_chunks.h"
#include "cuda/cuda_test_support.h"
#include "cuda/weight_chunks.h"

namespace strata::cuda {
namespace {

using testing::kDotTolerance;
using testing::random_floats;
using testing::random_rows;
using testing::reference_activations;
using testing::row_dot;
using testing::value_of;
using testing::weight_formats;
using testing::with_host_format;

class WeightChunks : public ::testing::TestWithParam<QuantType> {};

TEST_P(WeightChunks, ValuesAreTheReferenceDequantizersBitForBit) {
  const QuantType type = GetParam();
  const QuantTraits& traits = quant_traits(type);
  constexpr int64_t kRows = 3, kN = 512;
  const auto rows = random_rows(type, kRows, kN, 11);
  with_host_format(type, false, [&](auto format) {
    using F = decltype(format);
    std::vector<float> expected(kN);
    for (int64_t r = 0; r < kRows; ++r) {
      traits.dequantize_row(rows.data() + size_t(r) * traits.row_bytes(kN), expected.data(), kN);
      for (int64_t c = 0; c < kN / kChunkWeights; ++c) {
        const auto chunk = F::load(rows.data(), r, traits.row_bytes(kN), c);
        for (int i = 0; i < kChunkWeights; ++i) {
          const float ours = value_of<F>(chunk, i);
          const float reference = expected[size_t(c * kChunkWeights + i)];
          ASSERT_EQ(std::memcmp(&ours, &reference, 4), 0)
              << traits.name << " row " << r << " weight " << c * kChunkWeights + i << ": " << ours
              << " vs " << reference;
        }
      }
    }
  });
}

TEST_P(WeightChunks, DotProductsAreTheReferencesToFloatRounding) {
  const QuantType type = GetParam();
  const QuantTraits& traits = quant_traits(type);
  constexpr int64_t kRows = 4, kCols = 3;
  for (const int64_t n : {int64_t(256), int64_t(2048)}) {
    const auto rows = random_rows(type, kRows, n, 21);
    const auto x = random_floats(size_t(kCols * n), 22, 2.0f);
    auto activations = reference_activations(traits.vec_dot_type, x.data(), kCols, n);
    std::vector<uint8_t> x_bytes(quant_traits(traits.vec_dot_type).row_bytes(n) * kCols);
    for (int64_t c = 0; c < kCols; ++c)
      quant_traits(traits.vec_dot_type)
          .quantize_row(x.data() + c * n, x_bytes.data() + size_t(c) * x_bytes.size() / kCols, n);
    with_host_format(type, false, [&](auto format) {
      using F = decltype(format);
      for (int64_t r = 0; r < kRows; ++r) {
        float expected[kCols];
        traits.vec_dot_reference(n, rows.data() + size_t(r) * traits.row_bytes(n), x_bytes.data(),
                                 x_bytes.size() / kCols, kCols, expected);
        for (int64_t c = 0; c < kCols; ++c) {
          double magnitude;
          const float ours =
              row_dot<F>(rows.data(), r, traits.row_bytes(n), n, activations.view(), c, &magnitude);
          EXPECT_NEAR(ours, expected[c], kDotTolerance * magnitude + 1e-30)
              << traits.name << " n " << n << " row " << r << " column " << c;
        }
      }
    });
  }
}

INSTANTIATE_TEST_SUITE_P(AllFormats, WeightChunks, ::testing::ValuesIn(weight_formats()),
                         [](const auto& info) {
                           return std::string(quant_traits(info.param).name);
                         });

TEST(WeightChunksQ4_0, GroupedRowsDecodeAsTheirPlainRows) {
  constexpr int64_t kRows = 16, kN = 256;
  const auto plain = random_rows(QuantType::kQ4_0, kRows, kN, 31);
  std::vector<uint8_t> grouped = plain;
  group_q4_0_rows(grouped.data(), kN, kRows);
  const size_t row_bytes = quant_traits(QuantType::kQ4_0).row_bytes(kN);
  for (int64_t r = 0; r < kRows; ++r)
    for (int64_t c = 0; c < kN / kChunkWeights; ++c) {
      const IntChunk a = FormatQ4_0::load(plain.data(), r, row_bytes, c);
      const IntChunk b = FormatQ4_0Grouped::load(grouped.data(), r, row_bytes, c);
      ASSERT_EQ(std::memcmp(a.q, b.q, sizeof(a.q)), 0) << "row " << r << " chunk " << c;
      ASSERT_EQ(a.d, b.d) << "row " << r << " chunk " << c;
    }
}

// The conversion kernel's per-block arithmetic (convert_rows.cu), serially: block maxima, the
// quants, scales and sums.
ActivationRows converted_here(QuantType type, const std::vector<float>& x, int64_t n,
                              testing::HostActivations& out) {
  out.format = Format(uint32_t(type));
  out.n_rows = 1;
  out.n_in = n;
  out.values.assign(size_t(n) * 2, 0);
  out.d.assign(size_t(n / 32), 0.0f);
  out.s.assign(size_t(n / 32), 0.0f);
  out.bsums.assign(size_t(n / 16), 0);
  auto* q = reinterpret_cast<int8_t*>(out.values.data());
  if (type == QuantType::kQ8_0 || type == QuantType::kQ8_1) {
    for (int64_t c = 0; c < n / 32; ++c) {
      float amax = 0.0f;
      for (int i = 0; i < 32; ++i) amax = std::fmax(amax, std::fabs(x[size_t(c * 32 + i)]));
      int32_t sum = 0;
      for (int i = 0; i < 32; ++i) {
        const int32_t quant = q8_unsaturated(x[size_t(c * 32 + i)], q8_multiplier(amax));
        q[c * 32 + i] = saturate_int8(quant);
        sum += quant;
      }
      out.d[size_t(c)] = q8_scale(amax);
      out.s[size_t(c)] = q8_1_sum(amax, sum);
    }
  } else if (type == QuantType::kQ8_K) {
    for (int64_t b = 0; b < n / 256; ++b) {
      float magnitude = 0.0f, largest = 0.0f;
      for (int i = 0; i < 256; ++i)
        if (std::fabs(x[size_t(b * 256 + i)]) > magnitude) {
          magnitude = std::fabs(x[size_t(b * 256 + i)]);
          largest = x[size_t(b * 256 + i)];
        }
      const float iscale = q8_k_iscale(largest);
      for (int i = 0; i < 256; ++i) q[b * 256 + i] = q8_k_quant(x[size_t(b * 256 + i)], iscale);
      for (int g = 0; g < 16; ++g) {
        int sum = 0;
        for (int i = 0; i < 16; ++i) sum += q[b * 256 + 16 * g + i];
        out.bsums[size_t(b * 16 + g)] = int16_t(sum);
      }
      for (int c = 0; c < 8; ++c) out.d[size_t(b * 8 + c)] = q8_k_scale(iscale);
    }
  } else {
    auto* halves = reinterpret_cast<uint16_t*>(out.values.data());
    for (int64_t i = 0; i < n; ++i)
      halves[i] =
          type == QuantType::kF16 ? float_to_half(x[size_t(i)]) : float_to_bf16(x[size_t(i)]);
  }
  return out.view();
}

TEST(ActivationChunks, ConvertersMatchTheReferenceBitForBit) {
  constexpr int64_t kN = 1024;
  std::vector<float> x = random_floats(kN, 41, 3.0f);
  // Edge cases: an all-zero block, ties for the largest magnitude (first wins; of either sign),
  // halves exactly between two quants, a negative largest value.
  for (int i = 0; i < 32; ++i) x[size_t(i)] = 0.0f;
  x[300] = 9.0f;
  x[301] = -9.0f;
  x[40] = 127.0f / 2;
  x[41] = 63.5f;
  x[600] = -20.0f;
  for (const QuantType type :
       {QuantType::kQ8_0, QuantType::kQ8_1, QuantType::kQ8_K, QuantType::kF16, QuantType::kBF16}) {
    testing::HostActivations ours;
    converted_here(type, x, kN, ours);
    const testing::HostActivations reference = reference_activations(type, x.data(), 1, kN);
    const size_t value_bytes = type == QuantType::kF16 || type == QuantType::kBF16 ? 2 * kN : kN;
    EXPECT_EQ(std::memcmp(ours.values.data(), reference.values.data(), value_bytes), 0)
        << quant_traits(type).name;
    if (type == QuantType::kQ8_0 || type == QuantType::kQ8_1 || type == QuantType::kQ8_K) {
      EXPECT_EQ(ours.d, reference.d) << quant_traits(type).name;
    }
    if (type == QuantType::kQ8_1) {
      EXPECT_EQ(ours.s, reference.s);
    }
    if (type == QuantType::kQ8_K) {
      EXPECT_EQ(ours.bsums, reference.bsums);
    }
  }
}

}  // namespace
}  // namespace strata::cuda
