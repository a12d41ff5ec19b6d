// Q6_K, super-block of 256 weights in 16 sub-blocks of 16 (210 bytes), as two halves of 128:
//   bytes 0-127    ql[128]     low 4 bits; half h, quarter k (weights 128h + 32k + l, l < 32):
//                              nibble k / 2 of ql[64h + 32 (k % 2) + l]
//   bytes 128-191  qh[64]      high 2 bits: bits 2k..2k+1 of qh[32h + l]
//   bytes 192-207  scales[16]  int8 sub-block scales
//   bytes 208-209  d           fp16 super-block scale
// weight i = (d * scales[i / 16]) * (q - 32), q in [0, 63] ("type-0").
#include "quant/q6_k.h"

#include "quant/k_quant_common.h"
#include "quant/q8_k.h"

#include <algorithm>
#include <cmath>

namespace strata {
namespace {

using kquant::kSuperBlock;

// 6-bit quant of weight i, unsigned (the stored value; the weight uses q - 32).
int quant(const BlockQ6_K& block, int i) {
  const int h = i / 128, k = (i % 128) / 32, l = i % 32;
  const uint8_t low_byte = block.ql[64 * h + 32 * (k % 2) + l];
  const int low = k < 2 ? low_byte & 0x0f : low_byte >> 4;
  const int high = (block.qh[32 * h + l] >> (2 * k)) & 3;
  return low | high << 4;
}

// ggml's make_qx_quants with rmse_type 1 and no importance: a signed fit x ~ scale * level,
// levels in [-nmax, nmax - 1] (returned offset by nmax), weights x², trying 19 grid densities
// around nmax / max|x| and keeping the best least-squares score. Float sums in element order.
float fit_signed_scale(int n, int nmax, const float* x, uint8_t* levels) {
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
  auto level = [&](float iscale, int i) {
    return kquant::clamp_int(kquant::nearest_int(iscale * x[i]), -nmax, nmax - 1);
  };
  float iscale = float(-nmax) / max;
  float sum_lx = 0, sum_l2 = 0;
  for (int i = 0; i < n; ++i) {
    const int l = level(iscale, i);
    levels[i] = uint8_t(l + nmax);
    const float w = x[i] * x[i];
    sum_lx += w * x[i] * l;
    sum_l2 += w * l * l;
  }
  float scale = sum_l2 != 0 ? sum_lx / sum_l2 : 0.0f;
  float best = scale * sum_lx;
  for (int step = -9; step <= 9; ++step) {
    if (step == 0) continue;
    iscale = -(float(nmax) + 0.1f * float(step)) / max;
    sum_lx = sum_l2 = 0;
    for (int i = 0; i < n; ++i) {
      const int l = level(iscale, i);
      const float w = x[i] * x[i];
      sum_lx += w * x[i] * l;
      sum_l2 += w * l * l;
    }
    if (sum_l2 > 0 && sum_lx * sum_lx > best * sum_l2) {
      for (int i = 0; i < n; ++i) levels[i] = uint8_t(level(iscale, i) + nmax);
      scale = sum_lx / sum_l2;
      best = scale * sum_lx;
    }
  }
  return scale;
}

}  // namespace

// ggml's dequantize_row_q6_K's float operations, in its order: (d * scale) * q.
void dequantize_row_q6_k(const void* blocks, float* out, int64_t n) {
  for (int64_t b = 0; b < n / kSuperBlock; ++b) {
    const auto block = kquant::load<BlockQ6_K>(blocks, b);
    const float d = fp16_to_fp32(block.d);
    for (int i = 0; i < kSuperBlock; ++i)
      out[b * kSuperBlock + i] = d * float(block.scales[i / 16]) * float(quant(block, i) - 32);
  }
}

// ggml's quantize_row_q6_K_ref: a signed fit per 16-weight sub-block; the fit of largest
// magnitude sets d = -max / 128 so it codes as -128; scales are rounded to int8 (capped at 127)
// and every weight is re-rounded against its coded scale.
void quantize_row_q6_k(const float* in, void* blocks, int64_t n) {
  for (int64_t b = 0; b < n / kSuperBlock; ++b) {
    const float* x = in + b * kSuperBlock;
    uint8_t levels[kSuperBlock];
    float scales[16];
    float max_scale = 0, max_abs_scale = 0;
    for (int s = 0; s < 16; ++s) {
      scales[s] = fit_signed_scale(16, 32, x + 16 * s, levels + 16 * s);
      if (std::fabs(scales[s]) > max_abs_scale) {
        max_abs_scale = std::fabs(scales[s]);
        max_scale = scales[s];
      }
    }
    BlockQ6_K block = {};
    if (max_abs_scale >= 1e-15f) {
      const float iscale = -128.0f / max_scale;
      block.d = fp32_to_fp16(1 / iscale);
      for (int s = 0; s < 16; ++s)
        block.scales[s] = int8_t(std::min(127, kquant::nearest_int(iscale * scales[s])));
      for (int s = 0; s < 16; ++s) {
        const float d = fp16_to_fp32(block.d) * float(block.scales[s]);
        if (d == 0.0f) continue;  // keeps the fit's levels, as ggml does
        for (int i = 16 * s; i < 16 * s + 16; ++i)
          levels[i] = uint8_t(kquant::clamp_int(kquant::nearest_int(x[i] / d), -32, 31) + 32);
      }
      for (int i = 0; i < kSuperBlock; ++i) {
        const int h = i / 128, k = (i % 128) / 32, l = i % 32;
        block.ql[64 * h + 32 * (k % 2) + l] |= uint8_t((levels[i] & 0x0f) << (4 * (k / 2)));
        block.qh[32 * h + l] |= uint8_t((levels[i] >> 4) << (2 * k));
      }
    }
    kquant::store(blocks, b, block);
  }
}

// Per super-block: sum_s scales[s] * (q . x_q) over unsigned q, minus 32 * sum_s scales[s] *
// bsums[s] for the -32 offset, all in exact integers; then one float scaling.
void vec_dot_q6_k_scalar(int64_t n, const void* w, const void* x, size_t x_stride, int n_cols,
                         float* out) {
  for (int c = 0; c < n_cols; ++c) {
    const auto* column = static_cast<const uint8_t*>(x) + size_t(c) * x_stride;
    float sum = 0.0f;
    for (int64_t b = 0; b < n / kSuperBlock; ++b) {
      const auto wb = kquant::load<BlockQ6_K>(w, b);
      const auto xb = kquant::load<BlockQ8_K>(column, b);
      int32_t total = 0;
      for (int s = 0; s < 16; ++s) {
        int32_t dot = 0;
        for (int i = 16 * s; i < 16 * s + 16; ++i) dot += quant(wb, i) * xb.qs[i];
        total += wb.scales[s] * (dot - 32 * xb.bsums[s]);
      }
      sum += fp16_to_fp32(wb.d) * xb.d * float(total);
    }
    out[c] = sum;
  }
}

}  // namespace strata
