// Q5_K, super-block of 256 weights in 8 sub-blocks of 32 (176 bytes):
//   bytes 0-1      d         fp16 scale of the sub-block scales
//   bytes 2-3      dmin      fp16 scale of the sub-block minimums
//   bytes 4-15     scales    8 6-bit scales sc[j] and 8 6-bit minimums m[j] (k_scales.h)
//   bytes 16-47    qh[32]    fifth bits: bit j of qh[l] belongs to weight 32j + l
//   bytes 48-175   qs[128]   low 4 bits, placed as Q4_K's: byte 32g + l holds weight 64g + l in
//                            its low nibble and weight 64g + 32 + l in its high one
// weight i = (d * sc[j]) * q - dmin * m[j] with j = i / 32, q in [0, 31] ("type-1").
#include "quant/q5_k.h"

#include "quant/k_quant_common.h"
#include "quant/k_scales.h"
#include "quant/q8_k.h"

#include <algorithm>

namespace strata {
namespace {

using kquant::kSuperBlock;

int quant(const BlockQ5_K& block, int i) {
  const uint8_t byte = block.qs[32 * (i / 64) + i % 32];
  const int low = i % 64 < 32 ? byte & 0x0f : byte >> 4;
  const int high = (block.qh[i % 32] >> (i / 32)) & 1;
  return low | high << 4;
}

}  // namespace

// ggml's dequantize_row_q5_K's float operations, in its order (bit-identical results).
void dequantize_row_q5_k(const void* blocks, float* out, int64_t n) {
  for (int64_t b = 0; b < n / kSuperBlock; ++b) {
    const auto block = kquant::load<BlockQ5_K>(blocks, b);
    const float d = fp16_to_fp32(block.d);
    const float dmin = fp16_to_fp32(block.dmin);
    for (int j = 0; j < 8; ++j) {
      uint8_t sc, m;
      kquant::unpack_k_scale_min(block.scales, j, &sc, &m);
      const float scale = d * sc;
      const float min = dmin * m;
      for (int i = 32 * j; i < 32 * j + 32; ++i)
        out[b * kSuperBlock + i] = scale * quant(block, i) - min;
    }
  }
}

// ggml's quantize_row_q5_K_ref: Q4_K's procedure (kquant::quantize_type1_super_block) with 32
// levels and a narrower scale search.
void quantize_row_q5_k(const float* in, void* blocks, int64_t n) {
  constexpr kquant::ScaleMinSearch kSearch = {-0.5f, 0.1f, 15, false};
  for (int64_t b = 0; b < n / kSuperBlock; ++b) {
    const float* x = in + b * kSuperBlock;
    const kquant::Type1SuperBlock fit = kquant::quantize_type1_super_block(x, 31, kSearch);
    const uint8_t* levels = fit.levels;
    BlockQ5_K block;
    kquant::pack_k_scales(fit.scale_codes, fit.min_codes, block.scales);
    block.d = fit.d;
    block.dmin = fit.dmin;
    std::fill(block.qh, block.qh + 32, 0);
    for (int i = 0; i < kSuperBlock; ++i) block.qh[i % 32] |= uint8_t((levels[i] >> 4) << (i / 32));
    for (int g = 0; g < 4; ++g)
      for (int l = 0; l < 32; ++l)
        block.qs[32 * g + l] =
            uint8_t((levels[64 * g + l] & 0x0f) | (levels[64 * g + 32 + l] & 0x0f) << 4);
    kquant::store(blocks, b, block);
  }
}

void vec_dot_q5_k_scalar(int64_t n, const void* w, const void* x, size_t x_stride, int n_cols,
                         float* out) {
  for (int c = 0; c < n_cols; ++c) {
    const auto* column = static_cast<const uint8_t*>(x) + size_t(c) * x_stride;
    float sum = 0.0f;
    for (int64_t b = 0; b < n / kSuperBlock; ++b) {
      const auto wb = kquant::load<BlockQ5_K>(w, b);
      const auto xb = kquant::load<BlockQ8_K>(column, b);
      uint8_t codes[16];
      kquant::unpack_k_scales(wb.scales, codes);
      int32_t scaled = 0, mins = 0;
      for (int j = 0; j < 8; ++j) {
        int32_t dot = 0;
        for (int i = 32 * j; i < 32 * j + 32; ++i) dot += quant(wb, i) * xb.qs[i];
        scaled += codes[j] * dot;
        mins += codes[8 + j] * (xb.bsums[2 * j] + xb.bsums[2 * j + 1]);
      }
      sum += fp16_to_fp32(wb.d) * xb.d * float(scaled) - fp16_to_fp32(wb.dmin) * xb.d * float(mins);
    }
    out[c] = sum;
  }
}

}  // namespace strata
