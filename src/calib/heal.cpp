#include "calib/heal.h"

#include <fmt/format.h>

#include <cstring>
#include <map>

#include "base/output_path.h"
#include "base/progress.h"
#include "calib/calibration_file.h"
#include "calib/float_expert.h"
#include "cpu/thread_pool.h"
#include "gguf/gguf_writer.h"
#include "model/model.h"
#include "quant/q2_0.h"

namespace strata {
namespace {

constexpr std::string_view kHealKey = "strata.heal";

// Each sample's picked experts computed from the quantized model: [n_samples][k][n_embd].
std::vector<float> quantized_outputs(const Model& model, const ExpertCalibration& c, int layer,
                                     ThreadPool& pool) {
  const LayerCalibration& l = c.layers[size_t(layer)];
  const int64_t k = c.model.n_expert_used, n_embd = c.model.n_embd;
  std::vector<float> out(l.sample_outputs.size());
  std::vector<std::vector<int64_t>> pairs(size_t(c.model.n_expert));
  for (int64_t p = 0; p < c.n_samples * k; ++p)
    pairs[size_t(l.sample_picks[size_t(p)])].push_back(p);
  std::vector<FloatExpert> experts(size_t(pool.size()));
  std::vector<std::vector<float>> hidden(size_t(pool.size()),
                                         std::vector<float>(size_t(c.model.n_ff)));
  pool.parallel_for(c.model.n_expert, [&](int64_t e, int thread) {
    if (pairs[size_t(e)].empty()) return;
    FloatExpert& expert = experts[size_t(thread)];
    expert.load(model.weights().experts.layers[size_t(layer)], int(e));
    for (const int64_t p : pairs[size_t(e)])
      expert.compute(l.sample_inputs.data() + (p / k) * n_embd, hidden[size_t(thread)].data(),
                     out.data() + p * n_embd);
  });
  return out;
}

double dot(const float* a, const float* b, int64_t n) {
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += double(a[i]) * b[i];
  return sum;
}

// Fits on even samples, scores on odd ones.
LayerHeal fit_layer(const ExpertCalibration& c, int layer, const std::vector<float>& y_q) {
  const LayerCalibration& l = c.layers[size_t(layer)];
  const int64_t k = c.model.n_expert_used, n_embd = c.model.n_embd, n_expert = c.model.n_expert;
  std::vector<double> numerator(size_t(n_expert), 0), denominator(size_t(n_expert), 0);
  double layer_numerator = 0, layer_denominator = 0;
  std::vector<float> mixed_ref(static_cast<size_t>(n_embd)), mixed_q(static_cast<size_t>(n_embd));
  const auto mix = [&](int64_t s, const float* y, const std::vector<float>* scales,
                       std::vector<float>& out) {
    std::fill(out.begin(), out.end(), 0.0f);
    for (int64_t j = 0; j < k; ++j) {
      const int64_t p = s * k + j;
      const float w = l.sample_weights[size_t(p)] *
                      (scales ? (*scales)[size_t(l.sample_picks[size_t(p)])] : 1.0f);
      for (int64_t i = 0; i < n_embd; ++i) out[size_t(i)] += w * y[p * n_embd + i];
    }
  };
  for (int64_t s = 0; s < c.n_samples; s += 2) {
    for (int64_t j = 0; j < k; ++j) {
      const int64_t p = s * k + j;
      const int32_t e = l.sample_picks[size_t(p)];
      const double w2 = double(l.sample_weights[size_t(p)]) * l.sample_weights[size_t(p)];
      numerator[size_t(e)] +=
          w2 * dot(l.sample_outputs.data() + p * n_embd, y_q.data() + p * n_embd, n_embd);
      denominator[size_t(e)] += w2 * dot(y_q.data() + p * n_embd, y_q.data() + p * n_embd, n_embd);
    }
    mix(s, l.sample_outputs.data(), nullptr, mixed_ref);
    mix(s, y_q.data(), nullptr, mixed_q);
    layer_numerator += dot(mixed_ref.data(), mixed_q.data(), n_embd);
    layer_denominator += dot(mixed_q.data(), mixed_q.data(), n_embd);
  }
  LayerHeal heal;
  heal.layer_scale = layer_denominator > 0 ? float(layer_numerator / layer_denominator) : 1.0f;
  heal.expert_scales.resize(size_t(n_expert));
  for (int64_t e = 0; e < n_expert; ++e)
    heal.expert_scales[size_t(e)] = denominator[size_t(e)] > 0
                                        ? float(numerator[size_t(e)] / denominator[size_t(e)])
                                        : heal.layer_scale;
  const std::vector<float> layer_scales(size_t(n_expert), heal.layer_scale);
  const std::vector<float>* candidates[3] = {nullptr, &layer_scales, &heal.expert_scales};
  for (int64_t s = 1; s < c.n_samples; s += 2) {
    mix(s, l.sample_outputs.data(), nullptr, mixed_ref);
    for (int choice = 0; choice < 3; ++choice) {
      mix(s, y_q.data(), candidates[choice], mixed_q);
      for (int64_t i = 0; i < n_embd; ++i) {
        const double d = double(mixed_ref[size_t(i)]) - mixed_q[size_t(i)];
        heal.held_out_error[choice] += d * d;
      }
    }
  }
  int best = 0;
  for (int choice = 1; choice < 3; ++choice)
    if (heal.held_out_error[choice] < heal.held_out_error[best]) best = choice;
  heal.choice = HealChoice(best);
  return heal;
}

// The down projections' tensors (stacked, or one per expert) with each expert's Q2_0 scales
// multiplied by its healing scale.
std::vector<uint8_t> healed_tensor(const gguf::GgufFile& file, const gguf::TensorInfo& tensor,
                                   int first_expert, int64_t rows_per_expert,
                                   const std::vector<float>& scales) {
  std::vector<uint8_t> bytes(file.tensor_data(tensor), file.tensor_data(tensor) + tensor.n_bytes);
  const size_t row_bytes = quant_traits(QuantType::kQ2_0).row_bytes(tensor.shape[0]);
  const int64_t n_rows = tensor.n_elements() / tensor.shape[0];
  for (int64_t r = 0; r < n_rows; ++r) {
    const float scale = scales[size_t(first_expert + r / rows_per_expert)];
    for (size_t b = 0; b < row_bytes / sizeof(BlockQ2_0); ++b) {
      uint8_t* block = bytes.data() + size_t(r) * row_bytes + b * sizeof(BlockQ2_0);
      fp16_t d;
      std::memcpy(&d, block, 2);
      d = fp32_to_fp16(fp16_to_fp32(d) * scale);
      std::memcpy(block, &d, 2);
    }
  }
  return bytes;
}

std::string_view choice_name(HealChoice choice) {
  return choice == HealChoice::kNone ? "none" : choice == HealChoice::kLayer ? "layer" : "expert";
}

}  // namespace

Result<std::vector<LayerHeal>> heal_model_file(const std::string& input_path,
                                               const ExpertCalibration& calibration,
                                               const std::string& calibration_name,
                                               const std::string& output_path,
                                               const HealOptions& options) {
  STRATA_ASSIGN_OR_RETURN(auto file, gguf::GgufFile::open(input_path));
  STRATA_RETURN_IF_ERROR(check_output_path(output_path, gguf::model_inputs(*file),
                                           existing_output(options.overwrite)));
  STRATA_ASSIGN_OR_RETURN(auto model, Model::load(file));
  STRATA_RETURN_IF_ERROR(check_experts_readable(*model));
  STRATA_RETURN_IF_ERROR(check_calibration_matches(calibration, calibration_name,
                                                   calibrated_model(*model), input_path));
  const ExpertLayout& experts = model->weights().experts;
  for (const LayerExpertLayout& layer : experts.layers)
    if (layer.down.type != QuantType::kQ2_0)
      return Status::errorf(
          "{}: heal folds its scales into Q2_0 down projections; these experts are {} (strata "
          "quantize --experts q2_0 first)",
          input_path, quant_traits(layer.down.type).name);
  const int n_threads = options.n_threads > 0 ? options.n_threads : ThreadPool::default_threads();
  STRATA_ASSIGN_OR_RETURN(const auto pool, ThreadPool::start(n_threads));
  std::vector<LayerHeal> heals;
  std::string record;
  for (int l = 0; l < experts.n_layer(); ++l) {
    heals.push_back(fit_layer(calibration, l, quantized_outputs(*model, calibration, l, *pool)));
    record += fmt::format("{}{}", l ? "," : "", choice_name(heals.back().choice));
    if (options.progress) options.progress->advance(1);
  }

  // Down tensors by offset: stacked tensors start at expert 0's slice, unit-layout ones at
  // their expert's.
  struct Down {
    int layer, first_expert;
  };
  std::map<uint64_t, Down> downs;
  for (int l = 0; l < experts.n_layer(); ++l)
    for (int e = int(experts.layers[size_t(l)].down.file_offsets.size()) - 1; e >= 0; --e)
      downs[experts.layers[size_t(l)].down.file_offsets[size_t(e)]] = {l, e};
  gguf::GgufWriter writer(output_path);
  for (const std::string& key : file->keys())
    if (key != kHealKey) STRATA_RETURN_IF_ERROR(writer.copy_metadata(*file, key));
  writer.set_string(kHealKey, fmt::format("per layer: {}; from {}", record, calibration_name));
  for (const gguf::TensorInfo& tensor : file->tensors())
    STRATA_RETURN_IF_ERROR(writer.add_tensor(tensor.name, tensor.shape, tensor.type_id).status());
  STRATA_RETURN_IF_ERROR(writer.begin());
  for (const gguf::TensorInfo& tensor : file->tensors()) {
    const auto down = downs.find(tensor.offset);
    if (down == downs.end() || tensor.n_bytes == 0) {
      STRATA_RETURN_IF_ERROR(writer.write_tensor_data({file->tensor_data(tensor), tensor.n_bytes}));
      continue;
    }
    const LayerHeal& heal = heals[size_t(down->second.layer)];
    const std::vector<float> scales =
        heal.choice == HealChoice::kExpert
            ? heal.expert_scales
            : std::vector<float>(heal.expert_scales.size(),
                                 heal.choice == HealChoice::kLayer ? heal.layer_scale : 1.0f);
    STRATA_RETURN_IF_ERROR(writer.write_tensor_data(
        healed_tensor(*file, tensor, down->second.first_expert,
                      experts.layers[size_t(down->second.layer)].down.n_out, scales)));
  }
  STRATA_RETURN_IF_ERROR(writer.finish());
  return heals;
}

}  // namespace strata
