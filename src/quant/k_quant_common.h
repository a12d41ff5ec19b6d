// Scalar pieces shared by the 256-weight super-block formats (Q2_K..Q6_K, IQ4_XS, Q8_K): block
// access at any address, ggml's rounding helper and the scale/minimum search of the reference
// quantizers. Internal to quant/ and its kernels in the backends (cpu/kernels/).
//
// Everything here is `static` (internal linkage) on purpose: an inline function is emitted in every
// file that uses it and the linker keeps one copy, which may be the copy compiled with -mavx2 in a
// *_avx2.cpp file; a scalar caller on a CPU without AVX would then execute VEX instructions.
#pragma once

#include "base/fp16.h"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace strata::kquant {

inline constexpr int kSuperBlock = 256;

// Block `index` of a row. Rows may start at any byte (activation rows are packed back to back and
// tests offset them by one byte), so blocks are copied out instead of dereferenced in place.
template <class Block>
static Block load(const void* row, int64_t index) {
  Block block;
  std::memcpy(&block, static_cast<const uint8_t*>(row) + index * int64_t(sizeof(Block)),
              sizeof(Block));
  return block;
}

template <class Block>
static void store(void* row, int64_t index, const Block& block) {
  std::memcpy(static_cast<uint8_t*>(row) + index * int64_t(sizeof(Block)), &block, sizeof(Block));
}

// Rounds to the nearest integer, ties to even, as ggml's nearest_int (which adds 1.5 * 2^23 and
// lets the FPU round). The quantizers' codes depend on the tie rule.
static inline int nearest_int(float value) { return int(std::lrint(value)); }

static inline int clamp_int(int value, int lo, int hi) {
  return value < lo ? lo : value > hi ? hi : value;
}

// How search_scale_min tries scales: iscale = (nmax + rmin + rdelta * step) / (max - min) for
// step in [0, nstep], scoring each fit by weighted |error| (use_mad) or weighted error².
struct ScaleMinSearch {
  float rmin;
  float rdelta;
  int nstep;
  bool use_mad;
};

// Fits x[i] ~ scale * levels[i] - *min_out with levels in [0, nmax] and *min_out >= 0, for the
// "type-1" formats (Q2_K, Q4_K, Q5_K): ggml's make_qkx2_quants, with its float operations in the
// same order so that the chosen levels, and hence the files written, are the same. Returns the
// scale. REQUIRES: n <= 32, search.nstep >= 1.
float search_scale_min(int n, int nmax, const float* x, const float* weights,
                       const ScaleMinSearch& search, uint8_t* levels, float* min_out);

// A Q4_K / Q5_K super-block before bit packing.
struct Type1SuperBlock {
  uint8_t scale_codes[8];  // 6-bit
  uint8_t min_codes[8];    // 6-bit
  fp16_t d;
  fp16_t dmin;
  uint8_t levels[kSuperBlock];  // in [0, nmax]
};

// ggml's quantize_row_q4_K_ref / q5_K_ref up to the packing: each 32-weight sub-block gets a
// (scale, min) fit weighted by rms(sub-block) + |x|; the largest scale and minimum set
// d = max / 63 and dmin; the fits become 6-bit codes; then every weight is re-rounded against its
// coded scale and minimum (a sub-block whose coded scale is zero keeps the fit's levels).
Type1SuperBlock quantize_type1_super_block(const float* x, int nmax, const ScaleMinSearch& search);

}  // namespace strata::kquant
