// Q3_K, super-block of 256 weights in 16 sub-blocks of 16 (110 bytes), as two halves of 128;
// weight 128h + 32j + l (j = 0..3, l = 0..31) has
//   bytes 0-31     hmask[32]   its third bit at bit 4h + j of hmask[l]
//   bytes 32-95    qs[64]      its low 2 bits at bits 2j..2j+1 of qs[32h + l]
//   bytes 96-107   scales[12]  sixteen 6-bit codes c[s], packed (k_scales.h)
//   bytes 108-109  d           fp16 super-block scale
// weight i = (d * (c[i / 16] - 32)) * (q - 4), q in [0, 7] ("type-0"; a clear third bit means
// the quant is negative).
#include "quant/q3_k.h"

#include "quant/k_quant_common.h"
#include "quant/k_scales.h"
#include "quant/q8_k.h"

#include <algorithm>
#include <cmath>

namespace strata {
namespace {

using kquant::kSuperBlock;

// Signed quant of weight i, in [-4, 3].
int quant(const BlockQ3_K& block, int i) {
  const int h = i / 128, j = (i % 128) / 32, l = i % 32;
  const int low = (block.qs[32 * h + l] >> (2 * j)) & 3;
  const int high = (block.hmask[l] >> (4 * h + j)) & 1;
  return (low | high << 2) - 4;
}

// ggml's make_q3_quants with do_rmse: a signed fit x ~ scale * level, levels in [-nmax, nmax - 1],
// started from nmax / max|x| and refined by moving single levels while the x²-weighted
// least-squares score improves (at most 5 passes). Returns levels offset by nmax.
float fit_q3_scale(int n, int nmax, const float* x, uint8_t* levels) {
  float max = 0, amax = 0;
  for (int i = 0; i < n; ++i) {
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  }
  if (amax < 1e-15f) {  // ggml's GROUP_MAX_EPS: an all-zero group
    std::fill(levels, levels + n, 0);
    return 0.0f;
  }
  const float iscale = float(-nmax) / max;
  int level[16];
  float sum_lx = 0, sum_l2 = 0;
  for (int i = 0; i < n; ++i) {
    level[i] = kquant::clamp_int(kquant::nearest_int(iscale * x[i]), -nmax, nmax - 1);
    const float w = x[i] * x[i];
    sum_lx += w * x[i] * level[i];
    sum_l2 += w * level[i] * level[i];
  }
  for (int pass = 0; pass < 5; ++pass) {
    int n_changed = 0;
    for (int i = 0; i < n; ++i) {
      const float w = x[i] * x[i];
      float slx = sum_lx - w * x[i] * level[i];
      if (!(slx > 0)) continue;
      float sl2 = sum_l2 - w * level[i] * level[i];
      const int new_l = kquant::clamp_int(kquant::nearest_int(x[i] * sl2 / slx), -nmax, nmax - 1);
      if (new_l == level[i]) continue;
      slx += w * x[i] * new_l;
      sl2 += w * new_l * new_l;
      if (sl2 > 0 && slx * slx * sum_l2 > sum_lx * sum_lx * sl2) {
        level[i] = new_l;
        sum_lx = slx;
        sum_l2 = sl2;
        ++n_changed;
      }
    }
    if (n_changed == 0) break;
  }
  for (int i = 0; i < n; ++i) levels[i] = uint8_t(level[i] + nmax);
  return sum_l2 > 0.0f ? sum_lx / sum_l2 : 0.0f;
}

}  // namespace

// ggml's dequantize_row_q3_K's float operations, in its order: (d * scale) * q.
void dequantize_row_q3_k(const void* blocks, float* out, int64_t n) {
  for (int64_t b = 0; b < n / kSuperBlock; ++b) {
    const auto block = kquant::load<BlockQ3_K>(blocks, b);
    const float d = fp16_to_fp32(block.d);
    uint8_t codes[16];
    kquant::unpack_q3_k_scales(block.scales, codes);
    for (int s = 0; s < 16; ++s) {
      const float step = d * float(codes[s] - 32);
      for (int i = 16 * s; i < 16 * s + 16; ++i)
        out[b * kSuperBlock + i] = step * float(quant(block, i));
    }
  }
}

// ggml's quantize_row_q3_K_ref: a signed fit per 16-weight sub-block; the fit of largest
// magnitude sets d = -max / 32 so it codes as 0 (scale -32); the others round into [-32, 31];
// then every weight is re-rounded against its coded scale.
void quantize_row_q3_k(const float* in, void* blocks, int64_t n) {
  for (int64_t b = 0; b < n / kSuperBlock; ++b) {
    const float* x = in + b * kSuperBlock;
    uint8_t levels[kSuperBlock];
    float scales[16];
    float max_scale = 0, amax = 0;
    for (int s = 0; s < 16; ++s) {
      scales[s] = fit_q3_scale(16, 4, x + 16 * s, levels + 16 * s);
      if (std::fabs(scales[s]) > amax) {
        amax = std::fabs(scales[s]);
        max_scale = scales[s];
      }
    }
    BlockQ3_K block = {};
    uint8_t codes[16] = {};
    if (max_scale != 0.0f) {
      const float iscale = -32.0f / max_scale;
      for (int s = 0; s < 16; ++s) {
        const int code = int8_t(kquant::nearest_int(iscale * scales[s]));
        codes[s] = uint8_t(kquant::clamp_int(code, -32, 31) + 32);
      }
      block.d = fp32_to_fp16(1 / iscale);
    }
    kquant::pack_q3_k_scales(codes, block.scales);

    for (int s = 0; s < 16; ++s) {
      const float d = fp16_to_fp32(block.d) * float(codes[s] - 32);
      if (d == 0.0f) continue;  // keeps the fit's levels, as ggml does
      for (int i = 16 * s; i < 16 * s + 16; ++i)
        levels[i] = uint8_t(kquant::clamp_int(kquant::nearest_int(x[i] / d), -4, 3) + 4);
    }
    for (int i = 0; i < kSuperBlock; ++i) {
      const int h = i / 128, j = (i % 128) / 32, l = i % 32;
      block.qs[32 * h + l] |= uint8_t((levels[i] & 3) << (2 * j));
      block.hmask[l] |= uint8_t((levels[i] >> 2) << (4 * h + j));
    }
    kquant::store(blocks, b, block);
  }
}

void vec_dot_q3_k_scalar(int64_t n, const void* w, const void* x, size_t x_stride, int n_cols,
                         float* out) {
  for (int c = 0; c < n_cols; ++c) {
    const auto* column = static_cast<const uint8_t*>(x) + size_t(c) * x_stride;
    float sum = 0.0f;
    for (int64_t b = 0; b < n / kSuperBlock; ++b) {
      const auto wb = kquant::load<BlockQ3_K>(w, b);
      const auto xb = kquant::load<BlockQ8_K>(column, b);
      uint8_t codes[16];
      kquant::unpack_q3_k_scales(wb.scales, codes);
      int32_t total = 0;
      for (int s = 0; s < 16; ++s) {
        int32_t dot = 0;
        for (int i = 16 * s; i < 16 * s + 16; ++i) dot += quant(wb, i) * xb.qs[i];
        total += (codes[s] - 32) * dot;
      }
      sum += fp16_to_fp32(wb.d) * xb.d * float(total);
    }
    out[c] = sum;
  }
}

}  // namespace strata
