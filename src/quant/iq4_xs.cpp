// IQ4_XS, super-block of 256 weights in 8 sub-blocks of 32 (136 bytes):
//   bytes 0-1    d            fp16 super-block scale
//   bytes 2-3    scales_h     uint16: bits 2s..2s+1 are bits 4-5 of sub-block s's 6-bit code
//   bytes 4-7    scales_l[4]  bits 0-3 of code s in nibble s % 2 of scales_l[s / 2]
//   bytes 8-135  qs[128]      4-bit indices into kIQ4NLValues (iq4_nl.h); sub-block s owns
//                             qs[16s .. 16s + 15], weight 32s + r in the low nibble of byte r
//                             (r < 16) or the high nibble of byte r - 16, as in IQ4_NL
// weight i = (d * (code[i / 32] - 32)) * kIQ4NLValues[index].
#include "quant/iq4_xs.h"

#include "quant/iq4_nl.h"
#include "quant/k_quant_common.h"
#include "quant/q8_k.h"

#include <algorithm>
#include <cmath>

namespace strata {
namespace {

using kquant::kSuperBlock;

int code(const BlockIQ4_XS& block, int s) {
  const int low = (block.scales_l[s / 2] >> (4 * (s % 2))) & 0x0f;
  const int high = (block.scales_h >> (2 * s)) & 3;
  return low | high << 4;
}

int value(const BlockIQ4_XS& block, int i) {
  const int s = i / 32, r = i % 32;
  const uint8_t byte = block.qs[16 * s + r % 16];
  return kIQ4NLValues[r < 16 ? byte & 0x0f : byte >> 4];
}

// Index of the code book value nearest to x, the larger one on a tie: compares 2x with sums of
// neighbours, which is exact, where ggml's older search compared rounded differences.
int nearest_index(float x) {
  const float twice = x + x;
  int index = 0;
  for (int step = 8; step > 0; step /= 2) {
    const int candidate = index + step;
    if (twice >= float(kIQ4NLValues[candidate - 1] + kIQ4NLValues[candidate])) index = candidate;
  }
  return index;
}

// Best scale of one 32-weight sub-block, ggml's quantize_row_iq4_nl_impl with ntry = 7 and no
// importance: weights x²; start at d = max / 127 (the extreme lands on -127 or 113's side), then
// try 15 inverse scales (itry - 127) / max and keep the best least-squares score. The indices
// chosen here are discarded; the caller re-rounds against the coded scale.
float fit_sub_block(const float* x) {
  float amax = 0, max = 0;
  for (int j = 0; j < 32; ++j) {
    if (std::fabs(x[j]) > amax) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  if (amax < 1e-15f) return 0.0f;  // ggml's GROUP_MAX_EPS
  auto score = [&](float inverse, float* sum_qx, float* sum_q2) {
    *sum_qx = *sum_q2 = 0;
    for (int j = 0; j < 32; ++j) {
      const float q = kIQ4NLValues[nearest_index(inverse * x[j])];
      const float w = x[j] * x[j];
      *sum_qx += w * q * x[j];
      *sum_q2 += w * q * q;
    }
  };
  float sum_qx, sum_q2;
  score(1 / (-max / float(kIQ4NLValues[0])), &sum_qx, &sum_q2);
  float d = sum_q2 > 0 ? sum_qx / sum_q2 : 0.0f;
  float best = d * sum_qx;
  for (int itry = -7; itry <= 7; ++itry) {
    score(float(itry + kIQ4NLValues[0]) / max, &sum_qx, &sum_q2);
    if (sum_q2 > 0 && sum_qx * sum_qx > best * sum_q2) {
      d = sum_qx / sum_q2;
      best = d * sum_qx;
    }
  }
  return d;
}

}  // namespace

// ggml's dequantize_row_iq4_xs's float operations, in its order: (d * scale) * value.
void dequantize_row_iq4_xs(const void* blocks, float* out, int64_t n) {
  for (int64_t b = 0; b < n / kSuperBlock; ++b) {
    const auto block = kquant::load<BlockIQ4_XS>(blocks, b);
    const float d = fp16_to_fp32(block.d);
    for (int s = 0; s < 8; ++s) {
      const float step = d * float(code(block, s) - 32);
      for (int i = 32 * s; i < 32 * s + 32; ++i)
        out[b * kSuperBlock + i] = step * float(value(block, i));
    }
  }
}

// ggml's quantize_row_iq4_xs_ref: the sub-block fit of largest magnitude sets d = -max / 32 (so
// it codes as 0); each sub-block's scale rounds to a 6-bit code and its weights to the nearest
// code book value under the coded scale (computed from the unrounded d, as ggml does).
void quantize_row_iq4_xs(const float* in, void* blocks, int64_t n) {
  for (int64_t b = 0; b < n / kSuperBlock; ++b) {
    const float* x = in + b * kSuperBlock;
    float scales[8];
    float max_scale = 0, amax_scale = 0;
    for (int s = 0; s < 8; ++s) {
      scales[s] = fit_sub_block(x + 32 * s);
      if (std::fabs(scales[s]) > amax_scale) {
        amax_scale = std::fabs(scales[s]);
        max_scale = scales[s];
      }
    }
    BlockIQ4_XS block = {};
    const float d = -max_scale / 32;
    block.d = fp32_to_fp16(d);
    const float id = d != 0.0f ? 1 / d : 0.0f;
    uint8_t indices[kSuperBlock];
    for (int s = 0; s < 8; ++s) {
      const int l = kquant::clamp_int(kquant::nearest_int(id * scales[s]), -32, 31);
      const float dl = d * float(l);
      const float idl = dl != 0.0f ? 1 / dl : 0.0f;
      for (int i = 32 * s; i < 32 * s + 32; ++i) indices[i] = uint8_t(nearest_index(idl * x[i]));
      block.scales_l[s / 2] |= uint8_t(((l + 32) & 0x0f) << (4 * (s % 2)));
      block.scales_h |= uint16_t(((l + 32) >> 4) << (2 * s));
    }
    for (int s = 0; s < 8; ++s)
      for (int r = 0; r < 16; ++r)
        block.qs[16 * s + r] = uint8_t(indices[32 * s + r] | indices[32 * s + 16 + r] << 4);
    kquant::store(blocks, b, block);
  }
}

void vec_dot_iq4_xs_scalar(int64_t n, const void* w, const void* x, size_t x_stride, int n_cols,
                           float* out) {
  for (int c = 0; c < n_cols; ++c) {
    const auto* column = static_cast<const uint8_t*>(x) + size_t(c) * x_stride;
    float sum = 0.0f;
    for (int64_t b = 0; b < n / kSuperBlock; ++b) {
      const auto wb = kquant::load<BlockIQ4_XS>(w, b);
      const auto xb = kquant::load<BlockQ8_K>(column, b);
      int32_t total = 0;
      for (int s = 0; s < 8; ++s) {
        int32_t dot = 0;
        for (int i = 32 * s; i < 32 * s + 32; ++i) dot += value(wb, i) * xb.qs[i];
        total += (code(wb, s) - 32) * dot;
      }
      sum += fp16_to_fp32(wb.d) * xb.d * float(total);
    }
    out[c] = sum;
  }
}

}  // namespace strata
