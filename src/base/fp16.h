// IEEE 754 half precision and bfloat16 <-> float, bit-exact (round to nearest even), as ggml
// stores them in GGUF files. Scalar; SIMD kernels use F16C directly.
#pragma once

#include <bit>
#include <cstdint>

namespace strata {

using fp16_t = uint16_t;
using bf16_t = uint16_t;

// Exact: every half value is representable as a float. Table-driven (256 KiB, built once).
float fp16_to_fp32(fp16_t h);
// That table: entry h is fp16_to_fp32(h). SIMD kernels broadcast scales straight from it.
const float* fp16_to_fp32_table();
fp16_t fp32_to_fp16(float f);

inline float bf16_to_fp32(bf16_t b) { return std::bit_cast<float>(uint32_t(b) << 16); }

inline bf16_t fp32_to_bf16(float f) {
  uint32_t bits = std::bit_cast<uint32_t>(f);
  if ((bits & 0x7fffffff) > 0x7f800000) return bf16_t((bits >> 16) | 64);  // quiet the NaN
  bits += 0x7fff + ((bits >> 16) & 1);
  return bf16_t(bits >> 16);
}

}  // namespace strata
