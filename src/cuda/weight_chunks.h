// Weight formats as the CUDA kernels decode them: a row is read 32 weights (a chunk) at a time,
// and each format turns its chunk into what the kernels compute with.
//
//   * Integer formats (Q4_0 ... Q6_K, IQ4_NL, IQ4_XS) become an IntChunk: the 32 weights as
//     signed 8-bit codes, 4 to a word, with the integer sub-block scales and minimums and the
//     float scales that make the format's value out of integer dot products with the activation
//     chunk (activation_chunks.h). The integer sums are those of the reference dot products in
//     quant/ (exact); only the order in which the float terms of a row are added differs.
//   * Float formats (F32, F16, BF16) become a FloatChunk of 32 floats.
//
// Each format is a struct with load() (chunk `chunk` of row `row` of a matrix whose rows are
// row_bytes apart), value() (weight i of a chunk as the reference dequantizer computes it, for
// embeddings) and its activation format. The layouts are those documented in quant/<format>.cpp;
// Q4_0Grouped reads the row groups of quant/q4_0_groups.h. Host and device compile the same code.
#pragma once

#include <cstddef>
#include <cstdint>

#include "cuda/device_math.h"
#include "cuda/formats.h"

namespace strata::cuda {

struct IntChunk {
  uint32_t q[8];     // weight 4i + b in byte b of q[i], a signed code
  int32_t scale[2];  // integer scales of weights 0-15 and 16-31 (k-quants; 1 otherwise)
  int32_t min[2];    // integer minimums of the same halves (Q2_K, Q4_K, Q5_K; 0 otherwise)
  float d;           // the float scale
  float dmin;        // the float scale of the minimums (k-quants), or the minimum (Q4_1, Q5_1)
};

struct FloatChunk {
  float v[kChunkWeights];
};

namespace chunk_detail {

// Bytes of 0..15 (or 0..31, 0..63, 0..7) as signed codes minus 8 (16, 32, 4): adding 128 - offset
// stays inside each byte, and flipping the top bit subtracts 128 again.
STRATA_HD uint32_t minus(uint32_t bytes, uint32_t offset) {
  return (bytes + (0x80808080u - offset * 0x01010101u)) ^ 0x80808080u;
}

// Bit k of `bits` (k = first .. first + 3) moved to bit `to` of byte k - first.
STRATA_HD uint32_t spread_bits(uint32_t bits, int first, int to) {
  const uint32_t four = (bits >> first) & 0xf;
  return ((four & 1) | (four & 2) << 7 | (four & 4) << 14 | (four & 8) << 21) << to;
}

STRATA_HD constexpr uint32_t pack_bytes(int b0, int b1, int b2, int b3) {
  return uint32_t(uint8_t(b0)) | uint32_t(uint8_t(b1)) << 8 | uint32_t(uint8_t(b2)) << 16 |
         uint32_t(uint8_t(b3)) << 24;
}

// The IQ4_NL code book entries for the four low nibbles of the bytes of `nibbles`.
STRATA_HD uint32_t iq4_codes(uint32_t nibbles) {
  // kIQ4NLValues (quant/iq4_nl.h) as bytes, four to a word.
  constexpr uint32_t kTable[4] = {pack_bytes(-127, -104, -83, -65), pack_bytes(-49, -35, -22, -10),
                                  pack_bytes(1, 13, 25, 38), pack_bytes(53, 69, 89, 113)};
  const uint32_t selector =
      (nibbles & 0x7) | (nibbles >> 4 & 0x70) | (nibbles >> 8 & 0x700) | (nibbles >> 12 & 0x7000);
  const uint32_t low = byte_perm(kTable[0], kTable[1], selector);
  const uint32_t high = byte_perm(kTable[2], kTable[3], selector);
  const uint32_t upper = ((nibbles >> 3) & 0x01010101u) * 0xffu;  // nibbles 8..15
  return (low & ~upper) | (high & upper);
}

STRATA_HD IntChunk type0(float d) {
  IntChunk c;
  c.scale[0] = c.scale[1] = 1;
  c.min[0] = c.min[1] = 0;
  c.d = d;
  c.dmin = 0.0f;
  return c;
}

// The 6-bit scale and minimum of sub-block j of a Q4_K / Q5_K super-block (quant/k_scales.h).
STRATA_HD void k_scale_min(const uint8_t* packed, int j, int32_t* scale, int32_t* min) {
  if (j < 4) {
    *scale = packed[j] & 63;
    *min = packed[j + 4] & 63;
  } else {
    *scale = (packed[j + 4] & 0x0f) | (packed[j - 4] >> 6) << 4;
    *min = (packed[j + 4] >> 4) | (packed[j] >> 6) << 4;
  }
}

}  // namespace chunk_detail

// Q8_0, 34-byte blocks: fp16 d, 32 int8 quants.
struct FormatQ8_0 {
  static constexpr Format kFormat = Format::kQ8_0;
  static constexpr Format kActivation = Format::kQ8_0;
  STRATA_HD static IntChunk load(const uint8_t* data, int64_t row, size_t row_bytes,
                                 int64_t chunk) {
    const uint8_t* block = data + size_t(row) * row_bytes + size_t(chunk) * 34;
    IntChunk c = chunk_detail::type0(half_to_float(load_u16(block)));
    for (int i = 0; i < 8; ++i) c.q[i] = load_u32_from_halves(block + 2 + 4 * i);
    return c;
  }
};

// Q4_0, 18-byte blocks: fp16 d, weight j < 16 in the low nibble of qs[j], j + 16 in the high one;
// weight = (nibble - 8) * d.
struct FormatQ4_0 {
  static constexpr Format kFormat = Format::kQ4_0;
  static constexpr Format kActivation = Format::kQ8_0;
  STRATA_HD static IntChunk from_quants(float d, const uint32_t* words) {
    IntChunk c = chunk_detail::type0(d);
    for (int i = 0; i < 4; ++i) {
      c.q[i] = chunk_detail::minus(words[i] & 0x0f0f0f0fu, 8);
      c.q[i + 4] = chunk_detail::minus(words[i] >> 4 & 0x0f0f0f0fu, 8);
    }
    return c;
  }
  STRATA_HD static IntChunk load(const uint8_t* data, int64_t row, size_t row_bytes,
                                 int64_t chunk) {
    const uint8_t* block = data + size_t(row) * row_bytes + size_t(chunk) * 18;
    uint32_t words[4];
    for (int i = 0; i < 4; ++i) words[i] = load_u32_from_halves(block + 2 + 4 * i);
    return from_quants(half_to_float(load_u16(block)), words);
  }
};

// Q4_0 in row groups of 8 (quant/q4_0_groups.h): per block index, the 8 rows' scales, then their
// 16 quant bytes each; the quants of a row are 16-byte aligned.
struct FormatQ4_0Grouped {
  static constexpr Format kFormat = Format::kQ4_0;
  static constexpr Format kActivation = Format::kQ8_0;
  STRATA_HD static IntChunk load(const uint8_t* data, int64_t row, size_t row_bytes,
                                 int64_t chunk) {
    const int r = int(row % 8);
    const uint8_t* block = data + size_t(row / 8) * 8 * row_bytes + size_t(chunk) * 144;
    uint32_t words[4];
    for (int i = 0; i < 4; ++i) words[i] = load_u32(block + 16 + 16 * r + 4 * i);
    return FormatQ4_0::from_quants(half_to_float(load_u16(block + 2 * r)), words);
  }
};

// Q4_1, 20-byte blocks: fp16 d, fp16 m, nibbles as Q4_0; weight = nibble * d + m.
struct FormatQ4_1 {
  static constexpr Format kFormat = Format::kQ4_1;
  static constexpr Format kActivation = Format::kQ8_1;
  STRATA_HD static IntChunk load(const uint8_t* data, int64_t row, size_t row_bytes,
                                 int64_t chunk) {
    const uint8_t* block = data + size_t(row) * row_bytes + size_t(chunk) * 20;
    IntChunk c = chunk_detail::type0(half_to_float(load_u16(block)));
    c.dmin = half_to_float(load_u16(block + 2));
    for (int i = 0; i < 4; ++i) {
      const uint32_t word = load_u32(block + 4 + 4 * i);
      c.q[i] = word & 0x0f0f0f0fu;
      c.q[i + 4] = word >> 4 & 0x0f0f0f0fu;
    }
    return c;
  }
};

// Q5_0, 22-byte blocks: fp16 d, qh (bit j: bit 4 of weight j), nibbles as Q4_0;
// weight = (quant - 16) * d.
struct FormatQ5_0 {
  static constexpr Format kFormat = Format::kQ5_0;
  static constexpr Format kActivation = Format::kQ8_0;
  STRATA_HD static IntChunk load(const uint8_t* data, int64_t row, size_t row_bytes,
                                 int64_t chunk) {
    const uint8_t* block = data + size_t(row) * row_bytes + size_t(chunk) * 22;
    IntChunk c = chunk_detail::type0(half_to_float(load_u16(block)));
    const uint32_t high = load_u32_from_halves(block + 2);
    for (int i = 0; i < 4; ++i) {
      const uint32_t word = load_u32_from_halves(block + 6 + 4 * i);
      c.q[i] =
          chunk_detail::minus((word & 0x0f0f0f0fu) | chunk_detail::spread_bits(high, 4 * i, 4), 16);
      c.q[i + 4] = chunk_detail::minus(
          (word >> 4 & 0x0f0f0f0fu) | chunk_detail::spread_bits(high, 16 + 4 * i, 4), 16);
    }
    return c;
  }
};

// Q5_1, 24-byte blocks: fp16 d, fp16 m, qh, nibbles; weight = quant * d + m.
struct FormatQ5_1 {
  static constexpr Format kFormat = Format::kQ5_1;
  static constexpr Format kActivation = Format::kQ8_1;
  STRATA_HD static IntChunk load(const uint8_t* data, int64_t row, size_t row_bytes,
                                 int64_t chunk) {
    const uint8_t* block = data + size_t(row) * row_bytes + size_t(chunk) * 24;
    IntChunk c = chunk_detail::type0(half_to_float(load_u16(block)));
    c.dmin = half_to_float(load_u16(block + 2));
    const uint32_t high = load_u32(block + 4);
    for (int i = 0; i < 4; ++i) {
      const uint32_t word = load_u32(block + 8 + 4 * i);
      c.q[i] = (word & 0x0f0f0f0fu) | chunk_detail::spread_bits(high, 4 * i, 4);
      c.q[i + 4] = (word >> 4 & 0x0f0f0f0fu) | chunk_detail::spread_bits(high, 16 + 4 * i, 4);
    }
    return c;
  }
};

// Q2_0, 18-byte blocks of 64 weights: fp16 d, then the codes of weights j, j + 16, j + 32 and
// j + 48 in bits 0-1, 2-3, 4-5 and 6-7 of byte j; weight = (code - 1) * d. Chunk 2b is weights
// 0-31 of block b, chunk 2b + 1 weights 32-63.
struct FormatQ2_0 {
  static constexpr Format kFormat = Format::kQ2_0;
  static constexpr Format kActivation = Format::kQ8_0;
  STRATA_HD static IntChunk load(const uint8_t* data, int64_t row, size_t row_bytes,
                                 int64_t chunk) {
    const uint8_t* block = data + size_t(row) * row_bytes + size_t(chunk / 2) * 18;
    const int shift = 4 * int(chunk % 2);
    IntChunk c = chunk_detail::type0(half_to_float(load_u16(block)));
    for (int i = 0; i < 4; ++i) {
      const uint32_t word = load_u32_from_halves(block + 2 + 4 * i) >> shift;
      c.q[i] = chunk_detail::minus(word & 0x03030303u, 1);
      c.q[i + 4] = chunk_detail::minus(word >> 2 & 0x03030303u, 1);
    }
    return c;
  }
};

// IQ4_NL, 18-byte blocks: fp16 d, nibble indices into the code book (as Q4_0's nibbles).
struct FormatIQ4_NL {
  static constexpr Format kFormat = Format::kIQ4_NL;
  static constexpr Format kActivation = Format::kQ8_0;
  STRATA_HD static IntChunk load(const uint8_t* data, int64_t row, size_t row_bytes,
                                 int64_t chunk) {
    const uint8_t* block = data + size_t(row) * row_bytes + size_t(chunk) * 18;
    IntChunk c = chunk_detail::type0(half_to_float(load_u16(block)));
    for (int i = 0; i < 4; ++i) {
      const uint32_t word = load_u32_from_halves(block + 2 + 4 * i);
      c.q[i] = chunk_detail::iq4_codes(word & 0x0f0f0f0fu);
      c.q[i + 4] = chunk_detail::iq4_codes(word >> 4 & 0x0f0f0f0fu);
    }
    return c;
  }
};

// IQ4_XS, 136-byte super-blocks of 8 sub-blocks of 32: fp16 d, scales_h, scales_l[4], qs[128];
// weight = d * (code - 32) * book[index], sub-block s's indices in qs[16s .. 16s + 15] as IQ4_NL.
struct FormatIQ4_XS {
  static constexpr Format kFormat = Format::kIQ4_XS;
  static constexpr Format kActivation = Format::kQ8_K;
  STRATA_HD static IntChunk load(const uint8_t* data, int64_t row, size_t row_bytes,
                                 int64_t chunk) {
    const uint8_t* block = data + size_t(row) * row_bytes + size_t(chunk / 8) * 136;
    const int s = int(chunk % 8);
    IntChunk c = chunk_detail::type0(half_to_float(load_u16(block)));
    const int code =
        (block[4 + s / 2] >> (4 * (s % 2)) & 0x0f) | (load_u16(block + 2) >> (2 * s) & 3) << 4;
    c.scale[0] = c.scale[1] = code - 32;
    for (int i = 0; i < 4; ++i) {
      const uint32_t word = load_u32(block + 8 + 16 * s + 4 * i);
      c.q[i] = chunk_detail::iq4_codes(word & 0x0f0f0f0fu);
      c.q[i + 4] = chunk_detail::iq4_codes(word >> 4 & 0x0f0f0f0fu);
    }
    return c;
  }
};

// Q2_K, 84-byte super-blocks: scales[16] (low nibble scale, high nibble minimum per 16 weights),
// qs[64] (weight 128h + 32j + l at bits 2j of qs[32h + l]), fp16 d, fp16 dmin.
struct FormatQ2_K {
  static constexpr Format kFormat = Format::kQ2_K;
  static constexpr Format kActivation = Format::kQ8_K;
  STRATA_HD static IntChunk load(const uint8_t* data, int64_t row, size_t row_bytes,
                                 int64_t chunk) {
    const uint8_t* block = data + size_t(row) * row_bytes + size_t(chunk / 8) * 84;
    const int k = int(chunk % 8), h = k / 4, j = k % 4;
    IntChunk c;
    c.d = half_to_float(load_u16(block + 80));
    c.dmin = half_to_float(load_u16(block + 82));
    for (int half = 0; half < 2; ++half) {
      c.scale[half] = block[2 * k + half] & 0x0f;
      c.min[half] = block[2 * k + half] >> 4;
    }
    for (int i = 0; i < 8; ++i)
      c.q[i] = load_u32(block + 16 + 32 * h + 4 * i) >> (2 * j) & 0x03030303u;
    return c;
  }
};

// Q3_K, 110-byte super-blocks: hmask[32], qs[64], scales[12] (sixteen 6-bit codes), fp16 d;
// weight 128h + 32j + l = d * (code - 32) * ((low 2 bits | hmask bit << 2) - 4).
struct FormatQ3_K {
  static constexpr Format kFormat = Format::kQ3_K;
  static constexpr Format kActivation = Format::kQ8_K;
  STRATA_HD static IntChunk load(const uint8_t* data, int64_t row, size_t row_bytes,
                                 int64_t chunk) {
    const uint8_t* block = data + size_t(row) * row_bytes + size_t(chunk / 8) * 110;
    const int k = int(chunk % 8), h = k / 4, j = k % 4;
    IntChunk c = chunk_detail::type0(half_to_float(load_u16(block + 108)));
    for (int half = 0; half < 2; ++half) {
      const int s = 2 * k + half;
      const int code = (block[96 + s % 8] >> (4 * (s / 8)) & 0x0f) |
                       (block[96 + 8 + s % 4] >> (2 * (s / 4)) & 3) << 4;
      c.scale[half] = code - 32;
    }
    for (int i = 0; i < 8; ++i) {
      const uint32_t low =
          load_u32_from_halves(block + 32 + 32 * h + 4 * i) >> (2 * j) & 0x03030303u;
      const uint32_t high = load_u32_from_halves(block + 4 * i) >> (4 * h + j) & 0x01010101u;
      c.q[i] = chunk_detail::minus(low | high << 2, 4);
    }
    return c;
  }
};

// Q4_K, 144-byte super-blocks: fp16 d, fp16 dmin, scales[12], qs[128] (byte 32g + l: weight
// 64g + l low nibble, 64g + 32 + l high); weight = d * sc * q - dmin * m per 32.
struct FormatQ4_K {
  static constexpr Format kFormat = Format::kQ4_K;
  static constexpr Format kActivation = Format::kQ8_K;
  STRATA_HD static IntChunk load(const uint8_t* data, int64_t row, size_t row_bytes,
                                 int64_t chunk) {
    const uint8_t* block = data + size_t(row) * row_bytes + size_t(chunk / 8) * 144;
    const int k = int(chunk % 8);
    IntChunk c;
    c.d = half_to_float(load_u16(block));
    c.dmin = half_to_float(load_u16(block + 2));
    chunk_detail::k_scale_min(block + 4, k, &c.scale[0], &c.min[0]);
    c.scale[1] = c.scale[0];
    c.min[1] = c.min[0];
    for (int i = 0; i < 8; ++i)
      c.q[i] = load_u32(block + 16 + 32 * (k / 2) + 4 * i) >> (4 * (k % 2)) & 0x0f0f0f0fu;
    return c;
  }
};

// Q5_K, 176-byte super-blocks: fp16 d, fp16 dmin, scales[12], qh[32] (bit k of qh[l]: fifth bit
// of weight 32k + l), qs[128] as Q4_K.
struct FormatQ5_K {
  static constexpr Format kFormat = Format::kQ5_K;
  static constexpr Format kActivation = Format::kQ8_K;
  STRATA_HD static IntChunk load(const uint8_t* data, int64_t row, size_t row_bytes,
                                 int64_t chunk) {
    const uint8_t* block = data + size_t(row) * row_bytes + size_t(chunk / 8) * 176;
    const int k = int(chunk % 8);
    IntChunk c;
    c.d = half_to_float(load_u16(block));
    c.dmin = half_to_float(load_u16(block + 2));
    chunk_detail::k_scale_min(block + 4, k, &c.scale[0], &c.min[0]);
    c.scale[1] = c.scale[0];
    c.min[1] = c.min[0];
    for (int i = 0; i < 8; ++i) {
      const uint32_t low =
          load_u32(block + 48 + 32 * (k / 2) + 4 * i) >> (4 * (k % 2)) & 0x0f0f0f0fu;
      const uint32_t high = load_u32(block + 16 + 4 * i) >> k & 0x01010101u;
      c.q[i] = low | high << 4;
    }
    return c;
  }
};

// Q6_K, 210-byte super-blocks: ql[128], qh[64], int8 scales[16], fp16 d; weight 128h + 32k + l
// = d * scale * ((nibble k / 2 of ql[64h + 32 (k % 2) + l] | bits 2k of qh[32h + l] << 4) - 32).
struct FormatQ6_K {
  static constexpr Format kFormat = Format::kQ6_K;
  static constexpr Format kActivation = Format::kQ8_K;
  STRATA_HD static IntChunk load(const uint8_t* data, int64_t row, size_t row_bytes,
                                 int64_t chunk) {
    const uint8_t* block = data + size_t(row) * row_bytes + size_t(chunk / 8) * 210;
    const int k = int(chunk % 8), h = k / 4, quarter = k % 4;
    IntChunk c = chunk_detail::type0(half_to_float(load_u16(block + 208)));
    for (int half = 0; half < 2; ++half) c.scale[half] = int8_t(block[192 + 2 * k + half]);
    for (int i = 0; i < 8; ++i) {
      const uint32_t low =
          load_u32_from_halves(block + 64 * h + 32 * (quarter % 2) + 4 * i) >> (4 * (quarter / 2)) &
          0x0f0f0f0fu;
      const uint32_t high =
          load_u32_from_halves(block + 128 + 32 * h + 4 * i) >> (2 * quarter) & 0x03030303u;
      c.q[i] = chunk_detail::minus(low | high << 4, 32);
    }
    return c;
  }
};

// Weight i (0..31) of an integer chunk, with the reference dequantizers' float operations:
// (d * scale) * code - dmin * min, or code * d + m for Q4_1 and Q5_1.
template <class F>
STRATA_HD float chunk_value(const IntChunk& c, int i) {
  const float code = float(int8_t(c.q[i / 4] >> (8 * (i % 4))));
  if constexpr (F::kActivation == Format::kQ8_1) {
    return exact_add(exact_mul(code, c.d), c.dmin);
  } else if constexpr (F::kActivation == Format::kQ8_0) {
    return exact_mul(code, c.d);
  } else {
    const int half = i / 16;
    return exact_sub(exact_mul(exact_mul(c.d, float(c.scale[half])), code),
                     exact_mul(c.dmin, float(c.min[half])));
  }
}

// Word i of a chunk's codes, i a run-time value (the codes stay in registers: an array indexed
// at run time would live in local memory).
STRATA_HD uint32_t chunk_word(const IntChunk& c, int i) {
  uint32_t word = 0;
  for (int j = 0; j < 8; ++j)
    if (j == i) word = c.q[j];
  return word;
}

// F32, F16 and BF16 rows: 32 values a chunk.
struct FormatF32 {
  static constexpr Format kFormat = Format::kF32;
  static constexpr Format kActivation = Format::kF32;
  STRATA_HD static float value(const uint8_t* data, int64_t row, size_t row_bytes, int64_t i) {
    return reinterpret_cast<const float*>(data + size_t(row) * row_bytes)[i];
  }
  STRATA_HD static FloatChunk load(const uint8_t* data, int64_t row, size_t row_bytes,
                                   int64_t chunk) {
    const float* values =
        reinterpret_cast<const float*>(data + size_t(row) * row_bytes) + chunk * 32;
    FloatChunk c;
    for (int i = 0; i < 32; ++i) c.v[i] = values[i];
    return c;
  }
};

struct FormatF16 {
  static constexpr Format kFormat = Format::kF16;
  static constexpr Format kActivation = Format::kF16;
  STRATA_HD static float value(const uint8_t* data, int64_t row, size_t row_bytes, int64_t i) {
    return half_to_float(load_u16(data + size_t(row) * row_bytes + 2 * size_t(i)));
  }
  STRATA_HD static FloatChunk load(const uint8_t* data, int64_t row, size_t row_bytes,
                                   int64_t chunk) {
    const uint8_t* values = data + size_t(row) * row_bytes + size_t(chunk) * 64;
    FloatChunk c;
    for (int i = 0; i < 32; ++i) c.v[i] = half_to_float(load_u16(values + 2 * i));
    return c;
  }
};

struct FormatBF16 {
  static constexpr Format kFormat = Format::kBF16;
  static constexpr Format kActivation = Format::kBF16;
  STRATA_HD static float value(const uint8_t* data, int64_t row, size_t row_bytes, int64_t i) {
    return bf16_to_float(load_u16(data + size_t(row) * row_bytes + 2 * size_t(i)));
  }
  STRATA_HD static FloatChunk load(const uint8_t* data, int64_t row, size_t row_bytes,
                                   int64_t chunk) {
    const uint8_t* values = data + size_t(row) * row_bytes + size_t(chunk) * 64;
    FloatChunk c;
    for (int i = 0; i < 32; ++i) c.v[i] = bf16_to_float(load_u16(values + 2 * i));
    return c;
  }
};

}  // namespace strata::cuda
