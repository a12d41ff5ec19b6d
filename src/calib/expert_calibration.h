// What the routed experts of a model actually see on calibration text (`strata calibrate`),
// per layer and expert:
//   * E[x^2] per input channel of the tokens routed to the expert (the gate and up input): the
//     importance of each gate/up weight column for the Q2_0 quantizer;
//   * E[h^2] per channel of the down projection's input h = silu(gate x) * (up x), the
//     importance of each down weight column;
//   * how many tokens were routed to it, and the mean router-weighted norm of its output over
//     them (REAP's saliency, for pruning);
//   * samples for healing: tokens spread evenly over the text, each with its input x, its picks
//     and mixture weights, and the reference output of each picked expert (before weighting).
// Expert outputs are computed in float from the dequantized weights of the file, not with the
// engine's 8-bit activations: the reference is the model's own math, as exactly as floats give
// it.
#pragma once

#include <strata/status.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace strata {

class Model;
class ProgressBar;

// What a calibration belongs to. Requantized files keep every tensor but the routed experts,
// so the routers' digest is the same for the F16 original and its Q4_0 or Q2_0 experts, and a
// calibration of the one serves the others; any other model is refused.
struct CalibratedModel {
  std::string architecture;
  int64_t n_layer = 0, n_embd = 0, n_ff = 0, n_expert = 0, n_expert_used = 0;
  std::string routers_sha256;  // SHA-256 over every layer's router tensor bytes, in layer order

  bool operator==(const CalibratedModel&) const = default;
};

struct LayerCalibration {
  std::vector<float> input_mean_square;     // [n_expert][n_embd]: E[x^2], 0 where no token
  std::vector<float> hidden_mean_square;    // [n_expert][n_ff]:   E[h^2]
  std::vector<int64_t> tokens;              // [n_expert]: tokens routed to the expert
  std::vector<float> weighted_output_norm;  // [n_expert]: mean of w * ||y|| over those tokens
  std::vector<float> sample_inputs;         // [n_samples][n_embd]
  std::vector<int32_t> sample_picks;        // [n_samples][n_expert_used], best first
  std::vector<float> sample_weights;        // [n_samples][n_expert_used]
  std::vector<float> sample_outputs;        // [n_samples][n_expert_used][n_embd]
};

struct ExpertCalibration {
  CalibratedModel model;
  std::vector<std::string> documents;  // what the text was, one entry per document
  int64_t n_tokens = 0;                // tokens run through the model
  int64_t n_samples = 0;               // healing samples per layer
  std::vector<LayerCalibration> layers;

  std::span<const float> input_mean_square(int layer, int expert) const;
  std::span<const float> hidden_mean_square(int layer, int expert) const;
};

struct CalibrationOptions {
  int n_threads = 0;                // 0: one per core
  int64_t window = 512;             // tokens per forward pass (at most the trained context)
  int64_t n_samples = 256;          // healing samples per layer
  ProgressBar* progress = nullptr;  // advanced by one per token; may be null
};

// The model's identity as a calibration records it. Errors name the file.
Result<CalibratedModel> calibrated_model(const std::string& model_path);
CalibratedModel calibrated_model(const Model& model);

// Runs `sequences` (each split into windows from its start) through the model at `model_path`
// and collects the statistics above. `documents` is copied into the result. Errors name the file
// (a model whose experts cannot be read in file order) or say why the text is too short: at
// least 4 tokens per channel of the widest expert input are needed.
Result<ExpertCalibration> calibrate_experts(const std::string& model_path,
                                            const std::vector<std::vector<int32_t>>& sequences,
                                            std::vector<std::string> documents,
                                            const CalibrationOptions& options);

}  // namespace strata
