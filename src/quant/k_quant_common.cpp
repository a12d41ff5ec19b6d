#include "quant/k_quant_common.h"

#include "base/check.h"

#include <algorithm>

namespace strata::kquant {
namespace {

float fit_error(float diff, bool use_mad) { return use_mad ? std::fabs(diff) : diff * diff; }

}  // namespace

// The search starts from the min/max grid, then tries nstep + 1 other grid densities; for each
// it solves the weighted least-squares problem for (scale, min) given the levels, and keeps the
// fit with the lowest weighted error. Sums are float, accumulated in element order (ggml's).
float search_scale_min(int n, int nmax, const float* x, const float* weights,
                       const ScaleMinSearch& search, uint8_t* levels, float* min_out) {
  STRATA_CHECK_LE(n, 32);
  STRATA_CHECK_LE(1, search.nstep);
  float min = x[0];
  float max = x[0];
  const float sum_w = [&] {
    float sum = weights[0];
    for (int i = 1; i < n; ++i) sum += weights[i];
    return sum;
  }();
  float sum_x = weights[0] * x[0];
  for (int i = 1; i < n; ++i) {
    min = std::min(min, x[i]);
    max = std::max(max, x[i]);
    sum_x += weights[i] * x[i];
  }
  if (min > 0) min = 0;  // the minimum term only ever subtracts
  if (max == min) {
    std::fill(levels, levels + n, 0);
    *min_out = -min;
    return 0.0f;
  }

  float iscale = float(nmax) / (max - min);
  float scale = 1 / iscale;
  float best_error = 0;
  for (int i = 0; i < n; ++i) {
    levels[i] = uint8_t(clamp_int(nearest_int(iscale * (x[i] - min)), 0, nmax));
    best_error += weights[i] * fit_error(scale * levels[i] + min - x[i], search.use_mad);
  }
  uint8_t trial[32];
  for (int step = 0; step <= search.nstep; ++step) {
    iscale = (search.rmin + search.rdelta * float(step) + float(nmax)) / (max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      const int l = clamp_int(nearest_int(iscale * (x[i] - min)), 0, nmax);
      trial[i] = uint8_t(l);
      sum_l += weights[i] * l;
      sum_l2 += weights[i] * l * l;
      sum_xl += weights[i] * l * x[i];
    }
    const float det = sum_w * sum_l2 - sum_l * sum_l;
    if (!(det > 0)) continue;
    float this_scale = (sum_w * sum_xl - sum_x * sum_l) / det;
    float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / det;
    if (this_min > 0) {
      this_min = 0;
      this_scale = sum_xl / sum_l2;
    }
    float error = 0;
    for (int i = 0; i < n; ++i)
      error += weights[i] * fit_error(this_scale * trial[i] + this_min - x[i], search.use_mad);
    if (error < best_error) {
      std::copy(trial, trial + n, levels);
      best_error = error;
      scale = this_scale;
      min = this_min;
    }
  }
  *min_out = -min;
  return scale;
}

Type1SuperBlock quantize_type1_super_block(const float* x, int nmax, const ScaleMinSearch& search) {
  Type1SuperBlock block;
  float scales[8], mins[8];
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < 8; ++j) {
    const float* xs = x + 32 * j;
    float sum_x2 = 0;
    for (int l = 0; l < 32; ++l) sum_x2 += xs[l] * xs[l];
    const float rms = std::sqrt(sum_x2 / 32);
    float weights[32];
    for (int l = 0; l < 32; ++l) weights[l] = rms + std::fabs(xs[l]);
    scales[j] = search_scale_min(32, nmax, xs, weights, search, block.levels + 32 * j, &mins[j]);
    max_scale = std::max(max_scale, scales[j]);
    max_min = std::max(max_min, mins[j]);
  }
  const float inv_scale = max_scale > 0 ? 63.0f / max_scale : 0.0f;
  const float inv_min = max_min > 0 ? 63.0f / max_min : 0.0f;
  for (int j = 0; j < 8; ++j) {
    // ggml converts to uint8_t before capping at 63; a negative fit wraps around and is capped.
    block.scale_codes[j] = std::min<uint8_t>(63, uint8_t(nearest_int(inv_scale * scales[j])));
    block.min_codes[j] = std::min<uint8_t>(63, uint8_t(nearest_int(inv_min * mins[j])));
  }
  block.d = fp32_to_fp16(max_scale / 63.0f);
  block.dmin = fp32_to_fp16(max_min / 63.0f);

  for (int j = 0; j < 8; ++j) {
    const float d = fp16_to_fp32(block.d) * block.scale_codes[j];
    if (d == 0.0f) continue;
    const float dm = fp16_to_fp32(block.dmin) * block.min_codes[j];
    for (int i = 32 * j; i < 32 * j + 32; ++i)
      block.levels[i] = uint8_t(clamp_int(nearest_int((x[i] + dm) / d), 0, nmax));
  }
  return block;
}

}  // namespace strata::kquant
