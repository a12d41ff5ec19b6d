// Q2_K, super-block of 256 weights in 16 sub-blocks of 16 (84 bytes):
//   bytes 0-15   scales[16]  sub-block s: 4-bit scale code in the low nibble, 4-bit minimum code
//                            in the high nibble
//   bytes 16-79  qs[64]      2-bit quants: weight 128h + 32j + l (j = 0..3, l = 0..31) at bits
//                            2j..2j+1 of qs[32h + l]
//   bytes 80-81  d           fp16 scale of the scale codes
//   bytes 82-83  dmin        fp16 scale of the minimum codes
// weight i = (d * sc[s]) * q - dmin * m[s] with s = i / 16, q in [0, 3] ("type-1").
#include "quant/q2_k.h"

#include "quant/k_quant_common.h"
#include "quant/q8_k.h"

#include <cmath>

namespace strata {
namespace {

using kquant::kSuperBlock;

int quant(const BlockQ2_K& block, int i) {
  const int h = i / 128, j = (i % 128) / 32, l = i % 32;
  return (block.qs[32 * h + l] >> (2 * j)) & 3;
}

}  // namespace

// ggml's dequantize_row_q2_K's float operations, in its order (bit-identical results).
void dequantize_row_q2_k(const void* blocks, float* out, int64_t n) {
  for (int64_t b = 0; b < n / kSuperBlock; ++b) {
    const auto block = kquant::load<BlockQ2_K>(blocks, b);
    const float d = fp16_to_fp32(block.d);
    const float dmin = fp16_to_fp32(block.dmin);
    for (int s = 0; s < 16; ++s) {
      const float scale = d * float(block.scales[s] & 0x0f);
      const float min = dmin * float(block.scales[s] >> 4);
      for (int i = 16 * s; i < 16 * s + 16; ++i)
        out[b * kSuperBlock + i] = scale * float(quant(block, i)) - min;
    }
  }
}

// ggml's quantize_row_q2_K_ref: each sub-block gets a (scale, min) fit weighted by |x| and scored
// by absolute error; the largest scale and minimum set d = max / 15 and dmin; the fits become
// 4-bit codes; then every weight is re-rounded against the coded scale and minimum.
void quantize_row_q2_k(const float* in, void* blocks, int64_t n) {
  constexpr kquant::ScaleMinSearch kSearch = {-0.5f, 0.1f, 15, true};
  for (int64_t b = 0; b < n / kSuperBlock; ++b) {
    const float* x = in + b * kSuperBlock;
    uint8_t levels[kSuperBlock];
    float scales[16], mins[16];
    float max_scale = 0, max_min = 0;
    for (int s = 0; s < 16; ++s) {
      float weights[16];
      for (int l = 0; l < 16; ++l) weights[l] = std::fabs(x[16 * s + l]);
      scales[s] =
          kquant::search_scale_min(16, 3, x + 16 * s, weights, kSearch, levels + 16 * s, &mins[s]);
      if (scales[s] > max_scale) max_scale = scales[s];
      if (mins[s] > max_min) max_min = mins[s];
    }
    BlockQ2_K block = {};
    if (max_scale > 0) {
      const float iscale = 15.0f / max_scale;
      for (int s = 0; s < 16; ++s)
        block.scales[s] = uint8_t(kquant::nearest_int(iscale * scales[s]));
      block.d = fp32_to_fp16(max_scale / 15.0f);
    }
    if (max_min > 0) {
      const float iscale = 15.0f / max_min;
      for (int s = 0; s < 16; ++s)
        block.scales[s] |= uint8_t(kquant::nearest_int(iscale * mins[s]) << 4);
      block.dmin = fp32_to_fp16(max_min / 15.0f);
    }
    for (int s = 0; s < 16; ++s) {
      const float d = fp16_to_fp32(block.d) * float(block.scales[s] & 0x0f);
      if (d == 0.0f) continue;  // keeps the fit's levels, as ggml does
      const float dm = fp16_to_fp32(block.dmin) * float(block.scales[s] >> 4);
      for (int i = 16 * s; i < 16 * s + 16; ++i)
        levels[i] = uint8_t(kquant::clamp_int(kquant::nearest_int((x[i] + dm) / d), 0, 3));
    }
    for (int i = 0; i < kSuperBlock; ++i) {
      const int h = i / 128, j = (i % 128) / 32, l = i % 32;
      block.qs[32 * h + l] |= uint8_t(levels[i] << (2 * j));
    }
    kquant::store(blocks, b, block);
  }
}

// Per super-block: exact integer sums sum_s sc[s] * (q . x_q) and sum_s m[s] * bsums[s], then
// scaled once in float.
void vec_dot_q2_k_scalar(int64_t n, const void* w, const void* x, size_t x_stride, int n_cols,
                         float* out) {
  for (int c = 0; c < n_cols; ++c) {
    const auto* column = static_cast<const uint8_t*>(x) + size_t(c) * x_stride;
    float sum = 0.0f;
    for (int64_t b = 0; b < n / kSuperBlock; ++b) {
      const auto wb = kquant::load<BlockQ2_K>(w, b);
      const auto xb = kquant::load<BlockQ8_K>(column, b);
      int32_t scaled = 0, mins = 0;
      for (int s = 0; s < 16; ++s) {
        int32_t dot = 0;
        for (int i = 16 * s; i < 16 * s + 16; ++i) dot += quant(wb, i) * xb.qs[i];
        scaled += (wb.scales[s] & 0x0f) * dot;
        mins += (wb.scales[s] >> 4) * xb.bsums[s];
      }
      sum += fp16_to_fp32(wb.d) * xb.d * float(scaled) - fp16_to_fp32(wb.dmin) * xb.d * float(mins);
    }
    out[c] = sum;
  }
}

}  // namespace strata
