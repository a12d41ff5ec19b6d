// Healing (`strata heal`): an output scale per layer, or per expert, that pays back part of
// what quantizing the experts lost, folded into the Q2_0 scales of the down projections so that
// the kernels do not change.
//
// On the calibration's samples (real routed tokens, with the reference outputs of their
// experts), each picked expert's output is computed again from the quantized file, y_q, beside
// the reference y_ref. Scales are the least-squares optima (alpha = <y_ref, y_q> / ||y_q||^2):
//   * per layer, on the layer's mixed output sum_j w_j y_j of each sample;
//   * per expert, on that expert's pairs, each weighted by w_j^2 (its share of the mixture).
// The samples are split, even ones to fit and odd ones held out; per layer the choice (none,
// per layer, per expert) with the least held-out squared error of the mixed output is written.
// A per-expert scale is one parameter per expert against hundreds of pairs times the hidden
// width of equations; an expert with no fit pairs takes its layer's scale.
#pragma once

#include <strata/status.h>

#include <string>
#include <vector>

#include "calib/expert_calibration.h"

namespace strata {

class ProgressBar;

enum class HealChoice { kNone, kLayer, kExpert };

struct LayerHeal {
  HealChoice choice = HealChoice::kNone;
  float layer_scale = 1.0f;
  std::vector<float> expert_scales;      // [n_expert]
  double held_out_error[3] = {0, 0, 0};  // per HealChoice, squared error
};

struct HealOptions {
  int n_threads = 0;                // 0: one per core
  bool overwrite = false;           // replace an existing output (never the input)
  ProgressBar* progress = nullptr;  // advanced by one per layer
};

// Reads the model at `input_path` (its routed down projections in Q2_0), fits the scales on
// `calibration` (checked to belong to it) and writes the healed model to `output_path`,
// atomically; every tensor but the down projections is copied byte for byte. Errors name the
// file.
Result<std::vector<LayerHeal>> heal_model_file(const std::string& input_path,
                                               const ExpertCalibration& calibration,
                                               const std::string& calibration_name,
                                               const std::string& output_path,
                                               const HealOptions& options);

}  // namespace strata
