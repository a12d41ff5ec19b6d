// The reference dequantizers of the dense and 32-weight block formats, exhaustively: every
// value of every quant byte at every position, every fp16 scale and minimum, every half and
// bfloat16, each checked against a formula written here from the bit layout (little-endian
// bit fields counted from the start of the block), not from the implementation's structs.
#include "quant/legacy_test_util.h"

#include <gtest/gtest.h>
#include <immintrin.h>

#include <bit>
#include <cmath>

namespace strata {
namespace {

using legacy_test::Format;

// ggml's kvalues_iq4nl, typed in from ggml-common.h.
constexpr int kGgmlIQ4NLValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                      1,    13,   25,  38,  53,  69,  89,  113};

uint32_t bit_field(const uint8_t* p, int first_bit, int count) {
  uint32_t value = 0;
  for (int k = 0; k < count; ++k) {
    const int bit = first_bit + k;
    value |= uint32_t((p[bit / 8] >> (bit % 8)) & 1) << k;
  }
  return value;
}

float half_at(const uint8_t* p) { return fp16_to_fp32(fp16_t(p[0] | p[1] << 8)); }

// Weight j of a block, from the layout: the 4-bit field of weight j starts at bit
// 8 * (j % 16) + 4 * (j / 16) of qs; the fifth bit of Q5 weights is bit j of qh.
float expected_weight(QuantType type, const uint8_t* block, int j) {
  const int nibble_bit = 8 * (j % 16) + 4 * (j / 16);
  const float d = half_at(block);
  switch (type) {
    case QuantType::kQ4_0:
      return float(int(bit_field(block + 2, nibble_bit, 4)) - 8) * d;
    case QuantType::kQ4_1:
      return float(bit_field(block + 4, nibble_bit, 4)) * d + half_at(block + 2);
    case QuantType::kQ5_0:
      return float(int(bit_field(block + 6, nibble_bit, 4) + 16 * bit_field(block + 2, j, 1)) -
                   16) *
             d;
    case QuantType::kQ5_1:
      return float(bit_field(block + 8, nibble_bit, 4) + 16 * bit_field(block + 4, j, 1)) * d +
             half_at(block + 2);
    case QuantType::kQ8_0:
      return float(int8_t(block[2 + j])) * d;
    case QuantType::kQ8_1:
      return float(int8_t(block[4 + j])) * d;
    case QuantType::kIQ4_NL:
      return d * float(kGgmlIQ4NLValues[bit_field(block + 2, nibble_bit, 4)]);
    default:
      ADD_FAILURE() << "not a 32-weight block format";
      return 0.0f;
  }
}

bool same_float(float a, float b) {
  return (std::isnan(a) && std::isnan(b)) ||
         std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b);
}

// Dequantizes `row` (as given, and copied to an odd address) and compares every weight.
void expect_row_matches_layout(const Format& f, const std::vector<uint8_t>& row) {
  const int64_t n_blocks = int64_t(row.size() / f.block_bytes);
  std::vector<uint8_t> shifted(row.size() + 1);
  std::memcpy(shifted.data() + 1, row.data(), row.size());
  for (const uint8_t* start : {row.data(), static_cast<const uint8_t*>(shifted.data() + 1)}) {
    const std::vector<float> out = legacy_test::dequantize(f, start, n_blocks * 32);
    int failures = 0;
    for (int64_t b = 0; b < n_blocks && failures < 10; ++b) {
      for (int j = 0; j < 32; ++j) {
        const float want = expected_weight(f.type, row.data() + b * f.block_bytes, j);
        if (!same_float(out[b * 32 + j], want)) {
          ADD_FAILURE() << f.name << " block " << b << " weight " << j << ": " << out[b * 32 + j]
                        << " != " << want;
          ++failures;
        }
      }
    }
  }
}

std::vector<Format> block_formats() {
  std::vector<Format> out;
  for (const auto& f : legacy_test::kFormats)
    if (f.block_size == 32) out.push_back(f);
  return out;
}

TEST(LegacyDequantize, CodeBookIsGgmls) {
  for (int i = 0; i < 16; ++i) EXPECT_EQ(kIQ4NLValues[i], kGgmlIQ4NLValues[i]) << i;
}

// Every byte after the fp16 fields (qh and qs) takes all 256 values, one block each, over a
// random background; this covers every nibble, every IQ4_NL code and every qh bit at every
// position.
TEST(LegacyDequantize, EveryQuantByteValueAtEveryPosition) {
  std::mt19937 rng(1);
  for (const auto& f : block_formats()) {
    const int first_quant_byte = f.fields.m_offset >= 0 ? 4 : 2;
    const auto background = legacy_test::random_weights(f, 32, rng);
    std::vector<uint8_t> row;
    for (size_t position = first_quant_byte; position < f.block_bytes; ++position) {
      for (int value = 0; value < 256; ++value) {
        std::vector<uint8_t> block = background;
        block[position] = uint8_t(value);
        row.insert(row.end(), block.begin(), block.end());
      }
    }
    expect_row_matches_layout(f, row);
  }
}

// Every fp16 scale (including subnormals, infinities and NaNs) and, where there is one, every
// fp16 minimum, over quants that hold every code.
TEST(LegacyDequantize, EveryScaleAndMinimum) {
  std::mt19937 rng(2);
  for (const auto& f : block_formats()) {
    const auto background = legacy_test::random_weights(f, 32, rng);
    for (int field : {f.fields.d_offset, f.fields.m_offset}) {
      if (field < 0 || (f.type == QuantType::kQ8_1 && field == f.fields.m_offset)) continue;
      std::vector<uint8_t> row;
      for (uint32_t h = 0; h < 65536; ++h) {
        std::vector<uint8_t> block = background;
        block[field] = uint8_t(h);
        block[field + 1] = uint8_t(h >> 8);
        row.insert(row.end(), block.begin(), block.end());
      }
      expect_row_matches_layout(f, row);
    }
  }
}

__attribute__((target("f16c"))) float hardware_half_to_float(uint16_t h) { return _cvtsh_ss(h); }

TEST(LegacyDequantize, EveryHalfMatchesF16C) {
  if (!__builtin_cpu_supports("f16c")) GTEST_SKIP() << "CPU has no F16C to compare against";
  std::vector<uint8_t> row(65536 * 2 + 1);
  for (uint32_t h = 0; h < 65536; ++h) {
    row[1 + 2 * h] = uint8_t(h);
    row[2 + 2 * h] = uint8_t(h >> 8);
  }
  std::vector<float> out(65536);
  dequantize_row_f16(row.data() + 1, out.data(), 65536);
  for (uint32_t h = 0; h < 65536; ++h)
    ASSERT_TRUE(same_float(out[h], hardware_half_to_float(uint16_t(h)))) << h;
}

// bfloat16 = sign, 8 exponent bits, 7 mantissa bits: value from its fields, in double.
float bfloat16_from_fields(uint16_t b) {
  const int sign = b >> 15, exponent = (b >> 7) & 0xff, mantissa = b & 0x7f;
  double magnitude;
  if (exponent == 0xff) {
    magnitude = mantissa ? NAN : INFINITY;
  } else if (exponent == 0) {
    magnitude = std::ldexp(double(mantissa) / 128.0, -126);
  } else {
    magnitude = std::ldexp(1.0 + double(mantissa) / 128.0, exponent - 127);
  }
  return float(sign ? -magnitude : magnitude);
}

TEST(LegacyDequantize, EveryBfloat16MatchesItsFields) {
  std::vector<uint8_t> row(65536 * 2 + 1);
  for (uint32_t b = 0; b < 65536; ++b) {
    row[1 + 2 * b] = uint8_t(b);
    row[2 + 2 * b] = uint8_t(b >> 8);
  }
  std::vector<float> out(65536);
  dequantize_row_bf16(row.data() + 1, out.data(), 65536);
  for (uint32_t b = 0; b < 65536; ++b)
    ASSERT_TRUE(same_float(out[b], bfloat16_from_fields(uint16_t(b)))) << b;
}

TEST(LegacyDequantize, F32KeepsEveryBit) {
  std::mt19937 rng(3);
  std::vector<uint32_t> bits(4097);
  for (auto& word : bits) word = uint32_t(rng());
  bits[0] = 0x7fc00001;  // a NaN payload survives
  std::vector<float> out(bits.size());
  dequantize_row_f32(bits.data(), out.data(), int64_t(bits.size()));
  EXPECT_EQ(std::memcmp(out.data(), bits.data(), bits.size() * 4), 0);
}

}  // namespace
}  // namespace strata
