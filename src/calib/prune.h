// Expert pruning (`strata prune`): per layer, the routed experts of least saliency on the
// calibration text are dropped, with their router rows, and the expert count lowered; every
// other tensor and key is copied. The output of a model in ggml's formats is a GGUF llama.cpp
// loads.
//
// Saliency of expert e over the calibration tokens routed to it (X_e):
//   * kReap:  mean of w_e(x) * ||y_e(x)||, the router-weighted output norm (REAP), which does not
//             count how often e is picked;
//   * kUsage: |X_e|, how often it is picked;
//   * kTotal: the sum of w_e(x) * ||y_e(x)|| over X_e, REAP's term times usage: the share of the
//             layer's output the expert carries on the text.
// Ties keep the lower expert index. Kept experts keep their order.
#pragma once

#include <strata/status.h>

#include <string>
#include <vector>

#include "calib/expert_calibration.h"

namespace strata {

enum class Saliency { kReap, kUsage, kTotal };

struct PruneOptions {
  int64_t keep = 0;  // experts kept per layer: n_expert_used .. n_expert
  Saliency saliency = Saliency::kTotal;
  bool overwrite = false;
};

struct PruneSummary {
  std::vector<std::vector<int32_t>> kept;  // [n_layer]: the input's indices of kept experts
  uint64_t bytes_out = 0;
};

// The experts of each layer `options.keep` keeps, by saliency. REQUIRES: keep in
// [1, n_expert].
std::vector<std::vector<int32_t>> experts_to_keep(const ExpertCalibration& calibration,
                                                  int64_t keep, Saliency saliency);

// Reads `input_path` (stacked expert tensors; `calibration` checked to belong to it) and writes
// the pruned model to `output_path` atomically. Errors name the file: a --keep outside
// [n_expert_used, n_expert], a model in the unit layout.
Result<PruneSummary> prune_model_file(const std::string& input_path,
                                      const ExpertCalibration& calibration,
                                      const std::string& calibration_name,
                                      const std::string& output_path, const PruneOptions& options);

}  // namespace strata
