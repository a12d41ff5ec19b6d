#include "model/next_expert_predictor.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "base/check.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "quant/quant_type.h"

namespace strata {
namespace {

std::string weight_name(int64_t layer) { return fmt::format("blk.{}.next_experts.weight", layer); }
std::string bias_name(int64_t layer) { return fmt::format("blk.{}.next_experts.bias", layer); }

Result<std::span<const float>> f32_tensor(const gguf::GgufFile& file, const std::string& name,
                                          std::vector<int64_t> shape) {
  const gguf::TensorInfo* tensor = file.find_tensor(name);
  if (!tensor) return Status::errorf("{}: no tensor {}", file.name(), name);
  if (tensor->type_id != uint32_t(QuantType::kF32) || tensor->shape != shape)
    return Status::errorf("{}: {} is not F32 of shape [{}]", file.name(), name,
                          fmt::join(shape, ", "));
  return std::span<const float>(reinterpret_cast<const float*>(file.tensor_data(*tensor)),
                                size_t(tensor->n_elements()));
}

// Opens a predictor file and checks that it is one fitted for this shape; its horizon.
struct OpenedPredictor {
  std::shared_ptr<const gguf::GgufFile> file;
  int64_t horizon;
};
Result<OpenedPredictor> open_predictor(const std::string& path, int64_t n_layer, int64_t n_embd,
                                       int64_t n_expert) {
  STRATA_ASSIGN_OR_RETURN(auto file, gguf::GgufFile::open(path));
  const auto arch = file->get_string("general.architecture");
  if (!arch.ok() || arch.value() != NextExpertPredictor::kArchitecture)
    return Status::errorf("{}: not a next-expert predictor (strata fit-predictor writes them)",
                          path);
  for (const auto& [key, expected] : {std::pair{"n_layer", n_layer}, std::pair{"n_embd", n_embd},
                                      std::pair{"n_expert", n_expert}}) {
    const auto value = file->get_uint(fmt::format("strata.next_experts.{}", key));
    if (!value.ok()) return value.status();
    if (int64_t(value.value()) != expected)
      return Status::errorf("{}: fitted for {} {}, the model has {}", path, value.value(), key,
                            expected);
  }
  int64_t horizon = 1;
  if (file->has("strata.next_experts.horizon")) {
    const auto value = file->get_uint("strata.next_experts.horizon");
    if (!value.ok()) return value.status();
    if (value.value() < 1 || value.value() > NextExpertPredictor::kMaxHorizon)
      return Status::errorf("{}: horizon {} is not in 1..{}", path, value.value(),
                            NextExpertPredictor::kMaxHorizon);
    horizon = int64_t(value.value());
  }
  return OpenedPredictor{std::move(file), horizon};
}

uint64_t bytes_for(int64_t n_layer, int64_t n_embd, int64_t n_scores) {
  return uint64_t(n_layer) * uint64_t(n_scores) * uint64_t(n_embd + 1) * sizeof(float);
}

}  // namespace

NextExpertPredictor::NextExpertPredictor(int64_t n_layer, int64_t n_embd, int64_t n_expert,
                                         int64_t horizon, std::vector<float> weights,
                                         std::vector<float> biases)
    : n_layer_(n_layer),
      n_embd_(n_embd),
      n_expert_(n_expert),
      horizon_(horizon),
      weights_(std::move(weights)),
      biases_(std::move(biases)) {
  STRATA_CHECK(horizon >= 1 && horizon <= kMaxHorizon);
  STRATA_CHECK_EQ(weights_.size(), size_t(n_layer * n_scores() * n_embd));
  STRATA_CHECK_EQ(biases_.size(), size_t(n_layer * n_scores()));
}

Result<uint64_t> NextExpertPredictor::bytes_to_load(const std::string& path, int64_t n_layer,
                                                    int64_t n_embd, int64_t n_expert) {
  STRATA_ASSIGN_OR_RETURN(const OpenedPredictor opened,
                          open_predictor(path, n_layer, n_embd, n_expert));
  return bytes_for(n_layer, n_embd, opened.horizon * n_expert);
}

Result<std::shared_ptr<const NextExpertPredictor>> NextExpertPredictor::load(
    const std::string& path, int64_t n_layer, int64_t n_embd, int64_t n_expert) {
  STRATA_ASSIGN_OR_RETURN(const OpenedPredictor opened,
                          open_predictor(path, n_layer, n_embd, n_expert));
  const gguf::GgufFile& file = *opened.file;
  const int64_t n_scores = opened.horizon * n_expert;
  std::vector<float> weights, biases;
  weights.reserve(size_t(n_layer * n_scores * n_embd));
  biases.reserve(size_t(n_layer * n_scores));
  for (int64_t l = 0; l < n_layer; ++l) {
    STRATA_ASSIGN_OR_RETURN(const auto w, f32_tensor(file, weight_name(l), {n_embd, n_scores}));
    STRATA_ASSIGN_OR_RETURN(const auto b, f32_tensor(file, bias_name(l), {n_scores}));
    if (!std::all_of(w.begin(), w.end(), [](float v) { return std::isfinite(v); }) ||
        !std::all_of(b.begin(), b.end(), [](float v) { return std::isfinite(v); }))
      return Status::errorf("{}: layer {} holds a value that is not finite", path, l);
    weights.insert(weights.end(), w.begin(), w.end());
    biases.insert(biases.end(), b.begin(), b.end());
  }
  return std::make_shared<const NextExpertPredictor>(n_layer, n_embd, n_expert, opened.horizon,
                                                     std::move(weights), std::move(biases));
}

Status NextExpertPredictor::write(const std::string& path, int64_t n_layer, int64_t n_embd,
                                  int64_t n_expert, int64_t horizon, std::span<const float> weights,
                                  std::span<const float> biases, const std::string& source) {
  STRATA_CHECK(horizon >= 1 && horizon <= kMaxHorizon);
  const int64_t n_scores = horizon * n_expert;
  STRATA_CHECK_EQ(weights.size(), size_t(n_layer * n_scores * n_embd));
  STRATA_CHECK_EQ(biases.size(), size_t(n_layer * n_scores));
  gguf::GgufWriter writer(path);
  writer.set_string("general.architecture", kArchitecture);
  writer.set_uint32("strata.next_experts.n_layer", uint32_t(n_layer));
  writer.set_uint32("strata.next_experts.n_embd", uint32_t(n_embd));
  writer.set_uint32("strata.next_experts.n_expert", uint32_t(n_expert));
  writer.set_uint32("strata.next_experts.horizon", uint32_t(horizon));
  writer.set_string("strata.next_experts.source", source);
  const auto f32 = uint32_t(QuantType::kF32);
  for (int64_t l = 0; l < n_layer; ++l) {
    STRATA_RETURN_IF_ERROR(writer.add_tensor(weight_name(l), {n_embd, n_scores}, f32).status());
    STRATA_RETURN_IF_ERROR(writer.add_tensor(bias_name(l), {n_scores}, f32).status());
  }
  STRATA_RETURN_IF_ERROR(writer.begin());
  const auto bytes = [](std::span<const float> values) {
    return std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(values.data()),
                                    values.size_bytes());
  };
  for (int64_t l = 0; l < n_layer; ++l) {
    STRATA_RETURN_IF_ERROR(writer.write_tensor_data(
        bytes(weights.subspan(size_t(l * n_scores * n_embd), size_t(n_scores * n_embd)))));
    STRATA_RETURN_IF_ERROR(
        writer.write_tensor_data(bytes(biases.subspan(size_t(l * n_scores), size_t(n_scores)))));
  }
  return writer.finish();
}

Matrix NextExpertPredictor::matrix(int layer) const {
  STRATA_CHECK(layer >= 0 && layer < n_layer_);
  Matrix m;
  m.type = QuantType::kF32;
  m.data = reinterpret_cast<const uint8_t*>(weights_.data() +
                                            size_t(layer) * size_t(n_scores() * n_embd_));
  m.n_in = n_embd_;
  m.n_out = n_scores();
  return m;
}

std::span<const float> NextExpertPredictor::bias(int layer) const {
  STRATA_CHECK(layer >= 0 && layer < n_layer_);
  return {biases_.data() + size_t(layer) * size_t(n_scores()), size_t(n_scores())};
}

}  // namespace strata
