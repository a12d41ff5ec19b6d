// One routed expert's matrices dequantized to floats, and its output in float arithmetic:
// y = down (silu(gate x) * (up x)). The reference computation of calibration and healing.
#pragma once

#include <strata/status.h>

#include <cstdint>
#include <vector>

#include "experts/expert_layout.h"

namespace strata {

class Model;

// An error naming the file unless every routed expert of `model` is resident in GGUF row order
// (not in the row groups of strata repack --grouped).
Status check_experts_readable(const Model& model);

class FloatExpert {
 public:
  // Expert `expert` of `layer`, from its resident slices in GGUF row order.
  void load(const LayerExpertLayout& layer, int expert);
  // hidden: [n_ff] = silu(gate x) * (up x); y: [n_embd].
  void compute(const float* x, float* hidden, float* y) const;
  int64_t n_embd() const { return n_embd_; }
  int64_t n_ff() const { return n_ff_; }

 private:
  std::vector<float> gate_, up_, down_;
  int64_t n_embd_ = 0, n_ff_ = 0;
};

}  // namespace strata
