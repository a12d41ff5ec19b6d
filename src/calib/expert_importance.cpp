#include "calib/expert_importance.h"

#include <memory>

namespace strata {
namespace {

struct Importance {
  ExpertCalibration calibration;
  std::vector<std::vector<float>> layer_inputs;  // [n_layer][n_embd]
};

std::vector<float> pooled_inputs(const CalibratedModel& m, const LayerCalibration& layer) {
  std::vector<double> sum(size_t(m.n_embd), 0.0);
  double tokens = 0;
  for (int64_t e = 0; e < m.n_expert; ++e) {
    const double n = double(layer.tokens[size_t(e)]);
    tokens += n;
    for (int64_t i = 0; i < m.n_embd; ++i)
      sum[size_t(i)] += n * layer.input_mean_square[size_t(e * m.n_embd + i)];
  }
  std::vector<float> pooled(size_t(m.n_embd));
  for (int64_t i = 0; i < m.n_embd; ++i)
    pooled[size_t(i)] = tokens > 0 ? float(sum[size_t(i)] / tokens) : 0.0f;
  return pooled;
}

}  // namespace

ExpertImportance expert_importance(ExpertCalibration calibration) {
  auto importance = std::make_shared<Importance>();
  for (const LayerCalibration& layer : calibration.layers)
    importance->layer_inputs.push_back(pooled_inputs(calibration.model, layer));
  importance->calibration = std::move(calibration);
  return [importance](int layer, ExpertMatrix matrix, int expert) -> std::span<const float> {
    if (matrix == ExpertMatrix::kDown)
      return importance->calibration.hidden_mean_square(layer, expert);
    return importance->layer_inputs[size_t(layer)];
  };
}

}  // namespace strata
