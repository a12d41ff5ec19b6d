// Chooses the routers of a synthetic model layer by layer, so that a chosen share of
// a token's experts repeats from its predecessor (trained MoE models show 20-50 %).
//
// How: run the written model once over seeded random tokens and record every router's input;
// for each layer, evaluate the routes that candidate gain ratios would give on those inputs and
// keep the ratio closest to the target, with the response to the mean input removed (what
// all tokens share must not favour some experts) and every expert's logits scaled to the same
// variance (top-k must not favour the experts that point where inputs vary most); then
// rewrite the router tensors. The
// inputs of layer l + 1 were recorded under the provisional routers of layers <= l, so the
// result is approximate; measure_routing() reports what the final file does.
#pragma once

#include <strata/status.h>

#include <string>

#include "lab/synthetic_weights.h"

namespace strata {

struct RouterCalibration {
  double target_repeat = 0.35;
  int64_t n_tokens = 256;
  uint64_t seed = 1;
  int n_threads = 1;
};

// Rewrites the ffn_gate_inp tensors of `path` in place.
Status calibrate_routers(const std::string& path, SyntheticWeights& weights,
                         const RouterCalibration& calibration);

// Seeded random token ids in [0, n_vocab), the same for a given seed on every platform.
std::vector<int32_t> seeded_tokens(int64_t n, int64_t n_vocab, uint64_t seed);

}  // namespace strata
