// Packings of 6-bit sub-block scales.
//
// Q4_K and Q5_K, 12 bytes: eight 6-bit sub-block scales sc[0..7] and eight
// 6-bit minimums m[0..7], packed so that the first four of each are plain bytes:
//   byte j      (j = 0..3)  bits 0-5: sc[j]        bits 6-7: bits 4-5 of sc[j + 4]
//   byte j + 4  (j = 0..3)  bits 0-5: m[j]         bits 6-7: bits 4-5 of m[j + 4]
//   byte j + 8  (j = 0..3)  bits 0-3: bits 0-3 of sc[j + 4]
//                           bits 4-7: bits 0-3 of m[j + 4]
//
// Q3_K, 12 bytes: sixteen 6-bit codes c[0..15] (scale = c - 32):
//   byte j      (j = 0..7)  bits 0-3: bits 0-3 of c[j]      bits 4-7: bits 0-3 of c[j + 8]
//   byte 8 + j  (j = 0..3)  bits 2k..2k+1 (k = 0..3): bits 4-5 of c[4k + j]
// Internal to quant/. The functions are `static` so that scalar and AVX2 files each keep their own
// copy (see k_quant_common.h).
#pragma once

#include <cstdint>
#include <cstring>

namespace strata::kquant {

// Scale and minimum of sub-block j (0..7), one at a time: the layout above, read literally.
static inline void unpack_k_scale_min(const uint8_t* packed, int j, uint8_t* scale, uint8_t* min) {
  if (j < 4) {
    *scale = packed[j] & 63;
    *min = packed[j + 4] & 63;
  } else {
    *scale = uint8_t((packed[j + 4] & 0x0f) | (packed[j - 4] >> 6) << 4);
    *min = uint8_t((packed[j + 4] >> 4) | (packed[j] >> 6) << 4);
  }
}

// All sixteen at once, four bytes per 32-bit operation (the kernels' way):
// out[0..7] = sc[0..7], out[8..15] = m[0..7].
static inline void unpack_k_scales(const uint8_t* packed, uint8_t* out) {
  uint32_t word[3];
  std::memcpy(word, packed, 12);
  const uint32_t scales_lo = word[0] & 0x3f3f3f3f;
  const uint32_t mins_lo = word[1] & 0x3f3f3f3f;
  const uint32_t scales_hi = (word[2] & 0x0f0f0f0f) | ((word[0] >> 6) & 0x03030303) << 4;
  const uint32_t mins_hi = ((word[2] >> 4) & 0x0f0f0f0f) | ((word[1] >> 6) & 0x03030303) << 4;
  const uint32_t unpacked[4] = {scales_lo, scales_hi, mins_lo, mins_hi};
  std::memcpy(out, unpacked, 16);
}

// REQUIRES: every scale and minimum < 64.
static inline void pack_k_scales(const uint8_t* scales, const uint8_t* mins, uint8_t* packed) {
  for (int j = 0; j < 4; ++j) {
    packed[j] = uint8_t(scales[j] | (scales[j + 4] >> 4) << 6);
    packed[j + 4] = uint8_t(mins[j] | (mins[j + 4] >> 4) << 6);
    packed[j + 8] = uint8_t((scales[j + 4] & 0x0f) | (mins[j + 4] & 0x0f) << 4);
  }
}

// Q3_K: out[s] = c[s] for s = 0..15, four codes per 32-bit operation.
static inline void unpack_q3_k_scales(const uint8_t* packed, uint8_t* out) {
  uint32_t word[3];
  std::memcpy(word, packed, 12);
  const uint32_t unpacked[4] = {
      (word[0] & 0x0f0f0f0f) | (word[2] & 0x03030303) << 4,
      (word[1] & 0x0f0f0f0f) | ((word[2] >> 2) & 0x03030303) << 4,
      ((word[0] >> 4) & 0x0f0f0f0f) | ((word[2] >> 4) & 0x03030303) << 4,
      ((word[1] >> 4) & 0x0f0f0f0f) | ((word[2] >> 6) & 0x03030303) << 4,
  };
  std::memcpy(out, unpacked, 16);
}

// REQUIRES: every code < 64.
static inline void pack_q3_k_scales(const uint8_t* codes, uint8_t* packed) {
  for (int j = 0; j < 8; ++j) packed[j] = uint8_t((codes[j] & 0x0f) | (codes[j + 8] & 0x0f) << 4);
  for (int j = 0; j < 4; ++j) {
    packed[8 + j] = uint8_t((codes[j] >> 4) | (codes[4 + j] >> 4) << 2 | (codes[8 + j] >> 4) << 4 |
                            (codes[12 + j] >> 4) << 6);
  }
}

}  // namespace strata::kquant
