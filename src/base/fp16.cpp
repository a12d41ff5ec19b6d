#include "base/fp16.h"

#include <array>
#include <cstring>

namespace strata {
namespace {

float fp16_to_fp32_slow(fp16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000) << 16;
  const uint32_t exponent = (h >> 10) & 0x1f;
  uint32_t mantissa = h & 0x3ff;
  uint32_t bits;
  if (exponent == 0x1f) {
    bits = sign | 0x7f800000 | (mantissa << 13);
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    bits = sign;
  } else {  // subnormal: normalise
    int shift = 0;
    while ((mantissa & 0x400) == 0) {
      mantissa <<= 1;
      ++shift;
    }
    mantissa &= 0x3ff;
    bits = sign | (uint32_t(113 - shift) << 23) | (mantissa << 13);
  }
  return std::bit_cast<float>(bits);
}

const std::array<float, 65536>& fp16_table() {
  static const auto* table = [] {
    auto* t = new std::array<float, 65536>;
    for (uint32_t i = 0; i < 65536; ++i) (*t)[i] = fp16_to_fp32_slow(fp16_t(i));
    return t;
  }();
  return *table;
}

}  // namespace

float fp16_to_fp32(fp16_t h) { return fp16_table()[h]; }

const float* fp16_to_fp32_table() { return fp16_table().data(); }

fp16_t fp32_to_fp16(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (bits >> 16) & 0x8000;
  const uint32_t abs_bits = bits & 0x7fffffff;
  if (abs_bits > 0x7f800000) return fp16_t(sign | 0x7e00);   // NaN
  if (abs_bits >= 0x477ff000) return fp16_t(sign | 0x7c00);  // overflow -> inf
  if (abs_bits < 0x38800000) {                               // subnormal or zero
    if (abs_bits < 0x33000000) return fp16_t(sign);          // below half the smallest
    const uint32_t exponent = abs_bits >> 23;
    const uint32_t mantissa = (abs_bits & 0x7fffff) | 0x800000;
    const uint32_t shift = 126 - exponent;  // 14..24
    uint32_t half = mantissa >> shift;
    const uint32_t remainder = mantissa & ((1u << shift) - 1);
    const uint32_t halfway = 1u << (shift - 1);
    if (remainder > halfway || (remainder == halfway && (half & 1))) ++half;
    return fp16_t(sign | half);
  }
  uint32_t half = ((abs_bits >> 13) - (112u << 10));
  const uint32_t remainder = abs_bits & 0x1fff;
  if (remainder > 0x1000 || (remainder == 0x1000 && (half & 1))) ++half;  // may carry into exp
  return fp16_t(sign | half);
}

}  // namespace strata
