// The reference quantizers of the dense and 32-weight block formats: hand-computed blocks,
// round-trip error bounds on several distributions and magnitudes, zeros, constant rows, and
// the activation quantizer (Q8_0, Q8_1) against a model of llama.cpp's AVX2 instructions.
// (Bit-exactness against llama-quantize's output is in legacy_golden_test.cpp.)
#include "quant/legacy_test_util.h"

#include <gtest/gtest.h>
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>

namespace strata {
namespace {

using legacy_test::Format;

// |d - fp16(d)| for a stored scale d16: half an ulp, 2^-11 relative for normal halves and
// 2^-25 absolute for subnormal ones.
double scale_rounding(float d16) { return std::max(std::fabs(double(d16)) * 0x1p-11, 0x1p-25); }
// x / d + offset is computed in float before it is truncated; its relative error of a few 2^-24
// can move a value sitting on a rounding boundary by that much of a step.
constexpr double kArithmeticSlack = 1e-5;

float half_at(const uint8_t* p) { return fp16_to_fp32(fp16_t(p[0] | p[1] << 8)); }

// How far weight j of a block may be from x: half a step for round-to-nearest (a whole step
// for the top quant of the "type-0" formats, which the truncation clamps), plus the scale's
// and minimum's fp16 rounding times the largest quant.
double error_bound(const Format& f, const uint8_t* block, int j, int quant) {
  const float d16 = half_at(block);
  const double step = std::fabs(double(d16)) + scale_rounding(d16);
  switch (f.type) {
    case QuantType::kQ4_0:
      return (quant == 15 ? 1.0 : 0.5 + kArithmeticSlack) * step + 8 * scale_rounding(d16);
    case QuantType::kQ5_0:
      return (quant == 31 ? 1.0 : 0.5 + kArithmeticSlack) * step + 16 * scale_rounding(d16);
    case QuantType::kQ4_1:
      return (0.5 + kArithmeticSlack) * step + 15 * scale_rounding(d16) +
             scale_rounding(half_at(block + 2));
    case QuantType::kQ5_1:
      return (0.5 + kArithmeticSlack) * step + 31 * scale_rounding(d16) +
             scale_rounding(half_at(block + 2));
    case QuantType::kQ8_0:
    case QuantType::kQ8_1:
      return (0.5 + kArithmeticSlack) * step + 127 * scale_rounding(d16);
    default:
      ADD_FAILURE() << f.name << " has no simple bound";
      return 0.0;
  }
}

// The quant of weight j (the stored integer, before offsets), from the layout.
int stored_quant(const Format& f, const uint8_t* block, int j) {
  const int qs = f.type == QuantType::kQ5_1 ? 8 : f.type == QuantType::kQ5_0 ? 6 : 4;
  const int nibble_qs = f.type == QuantType::kQ4_0 || f.type == QuantType::kIQ4_NL ? 2 : qs;
  switch (f.type) {
    case QuantType::kQ8_0:
      return int8_t(block[2 + j]);
    case QuantType::kQ8_1:
      return int8_t(block[4 + j]);
    default: {
      const uint8_t byte = block[nibble_qs + j % 16];
      int quant = j < 16 ? byte & 15 : byte >> 4;
      if (f.type == QuantType::kQ5_0 || f.type == QuantType::kQ5_1) {
        const int qh = f.type == QuantType::kQ5_0 ? 2 : 4;
        quant |= ((block[qh + j / 8] >> (j % 8)) & 1) << 4;
      }
      return quant;
    }
  }
}

void expect_round_trip_within_bounds(const Format& f, const std::vector<float>& x,
                                     const std::string& what) {
  const int64_t n = int64_t(x.size());
  std::vector<uint8_t> q(f.row_bytes(n));
  f.quantize(x.data(), q.data(), n);
  const auto y = legacy_test::dequantize(f, q.data(), n);
  int failures = 0;
  for (int64_t i = 0; i < n && failures < 5; ++i) {
    const uint8_t* block = q.data() + (i / 32) * f.block_bytes;
    const double bound = error_bound(f, block, int(i % 32), stored_quant(f, block, int(i % 32)));
    if (!std::isfinite(y[i]) || std::fabs(double(x[i]) - double(y[i])) > bound) {
      ADD_FAILURE() << f.name << " " << what << " element " << i << ": " << x[i] << " -> " << y[i]
                    << " (bound " << bound << ")";
      ++failures;
    }
  }
}

std::vector<Format> block_formats_with_bounds() {
  std::vector<Format> out;
  for (const auto& f : legacy_test::kFormats)
    if (f.block_size == 32 && f.type != QuantType::kIQ4_NL) out.push_back(f);
  return out;
}

TEST(LegacyQuantize, RoundTripWithinHalfAStep) {
  std::mt19937 rng(20);
  for (const auto& f : block_formats_with_bounds())
    for (int kind = 0; kind < 4; ++kind)
      for (float scale : {1e-3f, 1.0f, 100.0f})
        expect_round_trip_within_bounds(
            f, legacy_test::random_row(32 * 64, scale, kind, rng),
            "kind " + std::to_string(kind) + " scale " + std::to_string(scale));
}

// Values as large as the fp16 fields allow (the scale d = max / 8 for Q4_0, / 16 for Q5_0, / 127
// for Q8_0, and the minimum itself for Q4_1/Q5_1, must stay below 65504), and values so small
// that the scale is an fp16 subnormal: the bounds hold and nothing becomes NaN or infinite.
TEST(LegacyQuantize, HugeAndTinyValues) {
  std::mt19937 rng(21);
  for (const auto& f : block_formats_with_bounds()) {
    const float largest = f.type == QuantType::kQ4_0                             ? 65000.0f * 8
                          : f.type == QuantType::kQ5_0                           ? 65000.0f * 16
                          : f.fields.m_offset >= 0 && f.type != QuantType::kQ8_1 ? 65000.0f
                                                                                 : 65000.0f * 127;
    expect_round_trip_within_bounds(f, legacy_test::random_row(32 * 16, largest, 1, rng), "huge");
    expect_round_trip_within_bounds(f, legacy_test::random_row(32 * 16, 1e-6f, 1, rng), "tiny");
    expect_round_trip_within_bounds(f, legacy_test::random_row(32 * 16, 1e-30f, 1, rng),
                                    "below fp16");
  }
}

TEST(LegacyQuantize, ZerosStayZero) {
  for (const auto& f : legacy_test::kFormats) {
    const std::vector<float> x(32 * 3, 0.0f);
    std::vector<uint8_t> q(f.row_bytes(96));
    f.quantize(x.data(), q.data(), 96);
    for (float y : legacy_test::dequantize(f, q.data(), 96)) EXPECT_EQ(y, 0.0f) << f.name;
  }
}

// Constant rows: the type-1 formats store the value as the minimum; the type-0 formats map it
// to their extreme quant, exactly when value / extreme is an fp16.
TEST(LegacyQuantize, ConstantRows) {
  for (const auto& f : legacy_test::kFormats) {
    const std::vector<float> x(64, 3.0f);
    std::vector<uint8_t> q(f.row_bytes(64));
    f.quantize(x.data(), q.data(), 64);
    const auto y = legacy_test::dequantize(f, q.data(), 64);
    const bool exact =
        f.type != QuantType::kQ8_0 && f.type != QuantType::kQ8_1 && f.type != QuantType::kIQ4_NL;
    for (float v : y) {
      if (exact)
        EXPECT_EQ(v, 3.0f) << f.name;
      else
        EXPECT_NEAR(v, 3.0f, 3.0f * 0x1p-11 * 127) << f.name;  // 127 * fp16 rounding of 3/127
    }
  }
}

std::array<uint8_t, 16> nibbles(const int (&quants)[32]) {
  std::array<uint8_t, 16> qs;
  for (int j = 0; j < 16; ++j) qs[j] = uint8_t((quants[j] & 15) | (quants[j + 16] & 15) << 4);
  return qs;
}

// Hand-computed: d = -max / 8 = 1 for max = -8, then trunc(x + 8.5) clamped to 15, so halves
// round up (-2.5 -> 6, 2.5 -> 11) and 7.5 clamps.
TEST(LegacyQuantize, Q4_0KnownBlock) {
  float x[32] = {-8, 7, 0, 3.4f, -2.5f, 2.5f, 6.6f, 7.5f, -7.6f};
  const int want[32] = {0, 15, 8, 11, 6, 11, 15, 15, 0, 8, 8, 8, 8, 8, 8, 8,
                        8, 8,  8, 8,  8, 8,  8,  8,  8, 8, 8, 8, 8, 8, 8, 8};
  BlockQ4_0 block;
  quantize_row_q4_0(x, &block, 32);
  EXPECT_EQ(block.d, 0x3c00);  // 1.0
  const auto qs = nibbles(want);
  EXPECT_EQ(std::memcmp(block.qs, qs.data(), 16), 0);
}

// A ramp over all 32 five-bit values: d = -16 / -16 = 1 and quant j = j.
TEST(LegacyQuantize, Q5_0KnownBlock) {
  float x[32];
  for (int j = 0; j < 32; ++j) x[j] = float(j - 16);
  BlockQ5_0 block;
  quantize_row_q5_0(x, &block, 32);
  EXPECT_EQ(block.d, 0x3c00);
  const uint8_t want_qh[4] = {0, 0, 0xff, 0xff};
  EXPECT_EQ(std::memcmp(block.qh, want_qh, 4), 0);
  for (int j = 0; j < 16; ++j) EXPECT_EQ(block.qs[j], uint8_t(j | j << 4)) << j;
}

// A ramp 0..15 twice with one half: d = 1, m = 0, and 7.5 rounds up to 8.
TEST(LegacyQuantize, Q4_1KnownBlock) {
  float x[32];
  int want[32];
  for (int j = 0; j < 32; ++j) want[j] = int(x[j] = float(j % 16));
  x[31] = 7.5f;
  want[31] = 8;
  BlockQ4_1 block;
  quantize_row_q4_1(x, &block, 32);
  EXPECT_EQ(block.d, 0x3c00);
  EXPECT_EQ(block.m, 0);
  const auto qs = nibbles(want);
  EXPECT_EQ(std::memcmp(block.qs, qs.data(), 16), 0);
}

TEST(LegacyQuantize, Q5_1KnownBlock) {
  float x[32];
  for (int j = 0; j < 32; ++j) x[j] = float(j) - 4.0f;  // min -4, d = 31 / 31
  BlockQ5_1 block;
  quantize_row_q5_1(x, &block, 32);
  EXPECT_EQ(block.d, 0x3c00);
  EXPECT_EQ(block.m, 0xc400);  // -4.0
  const uint8_t want_qh[4] = {0, 0, 0xff, 0xff};
  EXPECT_EQ(std::memcmp(block.qh, want_qh, 4), 0);
  for (int j = 0; j < 16; ++j) EXPECT_EQ(block.qs[j], uint8_t(j | j << 4)) << j;
}

// The code book itself, halved: the scale search finds d = 0.5 and every index exactly.
TEST(LegacyQuantize, IQ4_NLKnownBlock) {
  float x[32];
  for (int j = 0; j < 32; ++j) x[j] = 0.5f * float(kIQ4NLValues[j % 16]);
  BlockIQ4_NL block;
  quantize_row_iq4_nl(x, &block, 32);
  EXPECT_EQ(block.d, 0x3800);  // 0.5
  for (int j = 0; j < 16; ++j) EXPECT_EQ(block.qs[j], uint8_t(j | j << 4)) << j;
}

// IQ4_NL has no fixed grid, but each weight must take the code nearest to x / d (up to the fp16
// rounding of d, which moves x / d by at most 134 * 2^-11 for the largest values), and the
// error over Gaussian data must stay that of a 4-bit quantizer.
TEST(LegacyQuantize, IQ4_NLPicksNearestCodes) {
  constexpr double kRatioSlack = 2 * 134 * 0x1p-11;
  // Measured: 0.076 on N(0, 1) rows (Q4_0: 0.086), 0.064 uniform, 0.055 one-signed, and 0.110
  // with 1-in-32 outliers of 30 sigma, whose blocks get a 30 times coarser scale.
  constexpr double kMaxRelativeRms = 0.12;
  std::mt19937 rng(22);
  const Format& f = legacy_test::format(QuantType::kIQ4_NL);
  for (int kind = 0; kind < 4; ++kind) {
    const auto x = legacy_test::random_row(32 * 256, kind == 3 ? 1000.0f : 1.0f, kind, rng);
    std::vector<uint8_t> q(f.row_bytes(int64_t(x.size())));
    f.quantize(x.data(), q.data(), int64_t(x.size()));
    const auto y = legacy_test::dequantize(f, q.data(), int64_t(x.size()));
    double error2 = 0.0, signal2 = 0.0;
    for (size_t i = 0; i < x.size(); ++i) {
      const uint8_t* block = q.data() + (i / 32) * f.block_bytes;
      const double ratio = double(x[i]) / double(half_at(block));
      const int code = kIQ4NLValues[stored_quant(f, block, int(i % 32))];
      for (int other : kIQ4NLValues)
        ASSERT_LE(std::fabs(ratio - code), std::fabs(ratio - other) + kRatioSlack) << i;
      error2 += (double(x[i]) - y[i]) * (double(x[i]) - y[i]);
      signal2 += double(x[i]) * x[i];
    }
    EXPECT_LE(std::sqrt(error2 / signal2), kMaxRelativeRms) << "kind " << kind;
  }
}

// llama.cpp's x86 AVX2 activation quantizer, instruction by instruction: max|x| with maxps,
// d = max / 127, multiplier 127 / max, roundps to nearest even, cvtps2dq, saturating packs.
__attribute__((target("avx2"))) void avx2_model_q8(const float* x, int8_t* qs, float* d, int* sum) {
  __m256 v[4], amax = _mm256_setzero_ps();
  for (int k = 0; k < 4; ++k) {
    v[k] = _mm256_loadu_ps(x + 8 * k);
    amax = _mm256_max_ps(amax, _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v[k]));
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, amax);
  float max = 0.0f;
  for (float lane : lanes) max = std::max(max, lane);
  *d = max / 127.0f;
  const __m256 multiplier = _mm256_set1_ps(max != 0.0f ? 127.0f / max : 0.0f);
  alignas(32) int32_t ints[32];
  for (int k = 0; k < 4; ++k) {
    const __m256 rounded =
        _mm256_round_ps(_mm256_mul_ps(v[k], multiplier), _MM_FROUND_TO_NEAREST_INT);
    _mm256_store_si256(reinterpret_cast<__m256i*>(ints + 8 * k), _mm256_cvtps_epi32(rounded));
  }
  uint32_t wrapping_sum = 0;  // the 32-bit lanes of vpaddd wrap
  for (int j = 0; j < 32; ++j) {
    wrapping_sum += uint32_t(ints[j]);
    qs[j] = int8_t(std::clamp(ints[j], -128, 127));  // packs saturate
  }
  *sum = int32_t(wrapping_sum);
}

// The reference activation quantizers must write what llama.cpp's AVX2 instructions make of each
// block (and so must the CPU's AVX2 versions, which cpu/kernels/activation_kernels_test.cpp
// holds to the reference's bytes on the same row).
TEST(LegacyQuantize, ActivationsMatchLlamaCppAvx2Instructions) {
  if (!__builtin_cpu_supports("avx2")) GTEST_SKIP() << "CPU lacks AVX2 to model";
  std::mt19937 rng(23);
  const auto x = legacy_test::activation_test_row(rng);
  const int64_t n = int64_t(x.size());
  std::vector<BlockQ8_0> q8_0(n / 32);
  std::vector<BlockQ8_1> q8_1(n / 32);
  quantize_row_q8_0(x.data(), q8_0.data(), n);
  quantize_row_q8_1(x.data(), q8_1.data(), n);
  for (int64_t b = 0; b < n / 32; ++b) {
    int8_t qs[32];
    float d;
    int sum;
    avx2_model_q8(x.data() + 32 * b, qs, &d, &sum);
    SCOPED_TRACE("block " + std::to_string(b));
    ASSERT_EQ(q8_0[b].d, fp32_to_fp16(d));
    ASSERT_EQ(std::memcmp(q8_0[b].qs, qs, 32), 0);
    ASSERT_EQ(q8_1[b].d, fp32_to_fp16(d));
    ASSERT_EQ(q8_1[b].s, fp32_to_fp16(d * float(sum)));
    ASSERT_EQ(std::memcmp(q8_1[b].qs, qs, 32), 0);
  }
  // The ties block: k + 0.5 to even, where the weights' scalar reference would round away from
  // zero.
  const BlockQ8_0& ties = q8_0[n / 32 - 4];
  EXPECT_EQ(ties.qs[0], -16);  // -15.5
  EXPECT_EQ(ties.qs[1], -14);  // -14.5
  EXPECT_EQ(ties.qs[16], 0);   // 0.5
  EXPECT_EQ(ties.qs[17], 2);   // 1.5
}

__attribute__((target("f16c"))) uint16_t hardware_float_to_half(float f) {
  return _cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT);
}

// Every length up to 40 (the AVX2 converter's tail) and a long row of random bit patterns.
TEST(LegacyQuantize, F16RoundsLikeF16C) {
  if (!__builtin_cpu_supports("f16c")) GTEST_SKIP() << "CPU has no F16C to compare against";
  std::mt19937 rng(24);
  std::vector<float> x(100000);
  for (auto& v : x) {
    v = std::bit_cast<float>(uint32_t(rng()));
    if (std::isnan(v)) v = 1.0f;
  }
  for (int64_t n : {1, 7, 8, 9, 15, 16, 17, 31, 40, 100000}) {
    std::vector<uint8_t> q(size_t(n) * 2);
    quantize_row_f16(x.data(), q.data(), n);
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(uint16_t(q[2 * i] | q[2 * i + 1] << 8), hardware_float_to_half(x[i]))
          << x[i] << " n=" << n;
  }
}

// Round to nearest even on the bit pattern: among the two bfloat16 neighbours (the float's top
// 16 bits, and one more), the nearer; at a tie, the one with an even last bit.
uint16_t nearest_even_bfloat16(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  const uint32_t below = bits >> 16, remainder = bits & 0xffff;
  if (remainder > 0x8000 || (remainder == 0x8000 && (below & 1))) return uint16_t(below + 1);
  return uint16_t(below);
}

TEST(LegacyQuantize, Bf16RoundsToNearestEven) {
  std::mt19937 rng(25);
  std::vector<float> x(100000);
  for (auto& v : x) {
    v = std::bit_cast<float>(uint32_t(rng()));
    if (std::isnan(v)) v = 1.0f;
  }
  x[0] = std::bit_cast<float>(0x3f808000u);  // ties
  x[1] = std::bit_cast<float>(0x3f818000u);
  std::vector<uint8_t> q(x.size() * 2);
  quantize_row_bf16(x.data(), q.data(), int64_t(x.size()));
  for (size_t i = 0; i < x.size(); ++i)
    ASSERT_EQ(uint16_t(q[2 * i] | q[2 * i + 1] << 8), nearest_even_bfloat16(x[i])) << x[i];
}

TEST(LegacyQuantize, F32Copies) {
  const float x[3] = {1.5f, -0.0f, 3e38f};
  float y[3];
  quantize_row_f32(x, y, 3);
  EXPECT_EQ(std::memcmp(x, y, sizeof x), 0);
}

}  // namespace
}  // namespace strata
