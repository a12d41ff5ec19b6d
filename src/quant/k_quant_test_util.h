// Test-only helpers for the super-block formats: decoders that read each weight straight from the
// documented bit positions (a second reading of the layouts, sharing no code with the library),
// a matching encoder for building blocks by hand, and random inputs.
#pragma once

#include "base/fp16.h"
#include "quant/iq4_nl.h"
#include "quant/iq4_xs.h"
#include "quant/q2_k.h"
#include "quant/q3_k.h"
#include "quant/q4_k.h"
#include "quant/q5_k.h"
#include "quant/q6_k.h"
#include "quant/q8_k.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace strata::kquant_test {

// Bits [first, first + count) of a byte string, bit 0 being the low bit of byte 0.
inline int get_bits(const uint8_t* bytes, int first, int count) {
  int value = 0;
  for (int k = 0; k < count; ++k) value |= ((bytes[(first + k) / 8] >> ((first + k) % 8)) & 1) << k;
  return value;
}

inline void set_bits(uint8_t* bytes, int first, int count, int value) {
  for (int k = 0; k < count; ++k) {
    const int bit = first + k;
    bytes[bit / 8] = uint8_t((bytes[bit / 8] & ~(1 << bit % 8)) | ((value >> k) & 1) << bit % 8);
  }
}

// Where the bits of weight i live, per format (bit offsets within the named field).
struct QuantBits {
  int low_first;   // first bit of the low part within qs / ql
  int low_count;   // its width
  int high_first;  // first bit of the high part within hmask / qh, or -1
  int high_count;
};

// Q4_K and Q5_K: byte 32 * (i / 64) + i % 32 of qs, low nibble for the first 32 of each 64;
// Q5_K's fifth bit is bit i / 32 of qh[i % 32].
inline QuantBits q4_k_bits(int i) {
  return {8 * (32 * (i / 64) + i % 32) + 4 * ((i / 32) % 2), 4, -1, 0};
}
inline QuantBits q5_k_bits(int i) { return {q4_k_bits(i).low_first, 4, 8 * (i % 32) + i / 32, 1}; }
// Q2_K and Q3_K: bits 2j..2j+1 of qs[32h + l] with h = i / 128, j = (i % 128) / 32, l = i % 32;
// Q3_K's third bit is bit 4h + j of hmask[l].
inline QuantBits q2_k_bits(int i) {
  const int h = i / 128, j = (i % 128) / 32, l = i % 32;
  return {8 * (32 * h + l) + 2 * j, 2, -1, 0};
}
inline QuantBits q3_k_bits(int i) {
  const int h = i / 128, j = (i % 128) / 32, l = i % 32;
  return {q2_k_bits(i).low_first, 2, 8 * l + 4 * h + j, 1};
}
// Q6_K: quarter k = (i % 128) / 32 of half h = i / 128; low nibble k / 2 of ql[64h + 32(k % 2) +
// l], high bits 2k..2k+1 of qh[32h + l].
inline QuantBits q6_k_bits(int i) {
  const int h = i / 128, k = (i % 128) / 32, l = i % 32;
  return {8 * (64 * h + 32 * (k % 2) + l) + 4 * (k / 2), 4, 8 * (32 * h + l) + 2 * k, 2};
}
// IQ4_XS: sub-block s = i / 32 owns qs[16s .. 16s + 15]; r = i % 32 is in the low nibble of
// byte r for r < 16, else the high nibble of byte r - 16.
inline QuantBits iq4_xs_bits(int i) {
  const int s = i / 32, r = i % 32;
  return {8 * (16 * s + r % 16) + 4 * (r / 16), 4, -1, 0};
}

// Q4_K / Q5_K 6-bit codes of sub-block j from the 12-byte field (see k_scales.h's table).
inline int k_scale_code(const uint8_t* packed, int j) {
  return j < 4 ? get_bits(packed, 8 * j, 6)
               : get_bits(packed, 8 * (j + 4), 4) | get_bits(packed, 8 * (j - 4) + 6, 2) << 4;
}
inline int k_min_code(const uint8_t* packed, int j) {
  return j < 4 ? get_bits(packed, 8 * (j + 4), 6)
               : get_bits(packed, 8 * (j + 4) + 4, 4) | get_bits(packed, 8 * j + 6, 2) << 4;
}
inline void set_k_codes(uint8_t* packed, int j, int scale, int min) {
  if (j < 4) {
    set_bits(packed, 8 * j, 6, scale);
    set_bits(packed, 8 * (j + 4), 6, min);
  } else {
    set_bits(packed, 8 * (j + 4), 4, scale & 15);
    set_bits(packed, 8 * (j - 4) + 6, 2, scale >> 4);
    set_bits(packed, 8 * (j + 4) + 4, 4, min & 15);
    set_bits(packed, 8 * j + 6, 2, min >> 4);
  }
}
// Q3_K 6-bit code of sub-block s (0..15): low 4 bits in nibble s / 8 of byte s % 8, high 2 bits
// at bit 2 * (s / 4) of byte 8 + s % 4.
inline int q3_k_scale_code(const uint8_t* packed, int s) {
  return get_bits(packed, 8 * (s % 8) + 4 * (s / 8), 4) |
         get_bits(packed, 8 * (8 + s % 4) + 2 * (s / 4), 2) << 4;
}
inline void set_q3_k_scale_code(uint8_t* packed, int s, int code) {
  set_bits(packed, 8 * (s % 8) + 4 * (s / 8), 4, code & 15);
  set_bits(packed, 8 * (8 + s % 4) + 2 * (s / 4), 2, code >> 4);
}
// IQ4_XS 6-bit code of sub-block s: low 4 bits at bit 4s of scales_l, high 2 at bit 2s of scales_h.
inline int iq4_xs_scale_code(const BlockIQ4_XS& block, int s) {
  uint8_t high[2];
  std::memcpy(high, &block.scales_h, 2);
  return get_bits(block.scales_l, 4 * s, 4) | get_bits(high, 2 * s, 2) << 4;
}

// One decoded weight: `value` with ggml's float operations in ggml's order (what the dequantizer
// must return bit for bit), and the exact terms of value ~ scaled - offset in double.
struct RefWeight {
  float value;
  double scaled;  // d * scale * q
  double offset;  // dmin * min for type-1 formats, else 0
};

inline int quant(const uint8_t* low, const uint8_t* high, const QuantBits& bits) {
  int q = get_bits(low, bits.low_first, bits.low_count);
  if (bits.high_first >= 0) q |= get_bits(high, bits.high_first, bits.high_count) << bits.low_count;
  return q;
}

inline RefWeight type1(float d, float dmin, int sc, int m, int q) {
  const float scale = d * float(sc);
  const float min = dmin * float(m);
  return {scale * float(q) - min, double(d) * sc * q, double(dmin) * m};
}

inline RefWeight ref_q4_k(const BlockQ4_K& b, int i) {
  return type1(fp16_to_fp32(b.d), fp16_to_fp32(b.dmin), k_scale_code(b.scales, i / 32),
               k_min_code(b.scales, i / 32), quant(b.qs, nullptr, q4_k_bits(i)));
}

inline RefWeight ref_q5_k(const BlockQ5_K& b, int i) {
  return type1(fp16_to_fp32(b.d), fp16_to_fp32(b.dmin), k_scale_code(b.scales, i / 32),
               k_min_code(b.scales, i / 32), quant(b.qs, b.qh, q5_k_bits(i)));
}

inline RefWeight ref_q2_k(const BlockQ2_K& b, int i) {
  const int byte = b.scales[i / 16];
  return type1(fp16_to_fp32(b.d), fp16_to_fp32(b.dmin), byte & 15, byte >> 4,
               quant(b.qs, nullptr, q2_k_bits(i)));
}

inline RefWeight ref_q3_k(const BlockQ3_K& b, int i) {
  const float d = fp16_to_fp32(b.d);
  const int scale = q3_k_scale_code(b.scales, i / 16) - 32;
  const int q = quant(b.qs, b.hmask, q3_k_bits(i)) - 4;  // high bit set: q in [0, 3]
  const float step = d * float(scale);
  return {step * float(q), double(d) * scale * q, 0.0};
}

inline RefWeight ref_q6_k(const BlockQ6_K& b, int i) {
  const float d = fp16_to_fp32(b.d);
  const int scale = b.scales[i / 16];
  const int q = quant(b.ql, b.qh, q6_k_bits(i)) - 32;
  return {d * float(scale) * float(q), double(d) * scale * q, 0.0};
}

inline RefWeight ref_iq4_xs(const BlockIQ4_XS& b, int i) {
  const float d = fp16_to_fp32(b.d);
  const int scale = iq4_xs_scale_code(b, i / 32) - 32;
  const int value = kIQ4NLValues[quant(b.qs, nullptr, iq4_xs_bits(i))];
  const float step = d * float(scale);
  return {step * float(value), double(d) * scale * value, 0.0};
}

// Random finite half: random bits with the all-ones exponent (inf, NaN) avoided.
inline fp16_t random_finite_half(std::mt19937& rng) {
  fp16_t h = fp16_t(rng());
  if ((h & 0x7c00) == 0x7c00) h &= 0xbfff;
  return h;
}

// A half from a moderate range (scales of real weights), so sums stay in a meaningful range.
inline fp16_t random_scale_half(std::mt19937& rng) {
  std::uniform_real_distribution<float> magnitude(1e-4f, 1e-1f);
  return fp32_to_fp16(rng() % 8 == 0 ? -magnitude(rng) : magnitude(rng));
}

inline void fill_random_bytes(uint8_t* bytes, size_t size, std::mt19937& rng) {
  for (size_t i = 0; i < size; ++i) bytes[i] = uint8_t(rng());
}

// Float rows drawn from N(0, sigma) with sigma varying by super-block, so that blocks of one row
// have different scales.
inline std::vector<float> random_activations(int64_t n, std::mt19937& rng) {
  std::vector<float> x(static_cast<size_t>(n));
  std::uniform_real_distribution<float> sigma(0.05f, 4.0f);
  for (int64_t b = 0; b < n / 256; ++b) {
    std::normal_distribution<float> normal(0.0f, sigma(rng));
    for (int j = 0; j < 256; ++j) x[size_t(b * 256 + j)] = normal(rng);
  }
  return x;
}

inline uint32_t float_bits(float f) { return std::bit_cast<uint32_t>(f); }

}  // namespace strata::kquant_test
