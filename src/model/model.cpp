#include "model/model.h"

#include <fmt/format.h>

#include "model/architecture.h"
#include "model/tensor_data.h"

namespace strata {

Result<std::shared_ptr<const Model>> Model::load(std::shared_ptr<const gguf::GgufFile> file,
                                                 std::shared_ptr<const TensorData> data) {
  if (!data) data = std::make_shared<MappedTensorData>(*file);
  return bind(std::move(file), std::move(data), false);
}

Result<std::shared_ptr<const Model>> Model::describe(std::shared_ptr<const gguf::GgufFile> file) {
  return bind(std::move(file), nullptr, true);
}

Result<std::shared_ptr<const Model>> Model::bind(std::shared_ptr<const gguf::GgufFile> file,
                                                 std::shared_ptr<const TensorData> data,
                                                 bool shapes_only) {
  if (!file->has("general.architecture"))
    return Status::errorf("{}: missing key general.architecture (not a model file?)", file->name());
  STRATA_ASSIGN_OR_RETURN(const std::string arch, file->get_string("general.architecture"));
  STRATA_RETURN_IF_ERROR(check_row_groups_key(*file));
  for (const Architecture& candidate : architectures()) {
    if (candidate.name != arch) continue;
    STRATA_ASSIGN_OR_RETURN(BoundModel bound, candidate.bind(TensorBinder(
                                                  file, arch, shapes_only ? nullptr : data.get())));
    auto model = std::shared_ptr<Model>(new Model());
    model->file_ = std::move(file);
    model->data_ = std::move(data);
    model->config_ = std::move(bound.config);
    model->weights_ = std::move(bound.weights);
    return std::shared_ptr<const Model>(std::move(model));
  }
  std::string supported;
  for (const Architecture& a : architectures())
    supported += fmt::format("{}{}", supported.empty() ? "" : ", ", a.name);
  return Status::errorf("{}: unknown architecture '{}' (supported: {})", file->name(), arch,
                        supported);
}

WeightFormats Model::weight_formats() const {
  WeightFormats formats;
  formats.output = weights_.output.type;
  for (size_t layer = 0; layer < weights_.layers.size(); ++layer) {
    const LayerWeights& w = weights_.layers[layer];
    const LayerExpertLayout& experts = weights_.experts.layers[layer];
    formats.layers.push_back({.q = w.attention.q.type,
                              .k = w.attention.k.type,
                              .v = w.attention.v.type,
                              .o = w.attention.o.type,
                              .router = w.router.type,
                              .gate = experts.gate.type,
                              .up = experts.up.type,
                              .down = experts.down.type,
                              .shared_expert = config_.n_ff_shared > 0,
                              .shared_gate = w.shared.gate.type,
                              .shared_up = w.shared.up.type,
                              .shared_down = w.shared.down.type});
  }
  return formats;
}

uint64_t Model::dense_bytes() const {
  uint64_t tensors = 0;
  for (const auto& tensor : file_->tensors()) tensors += tensor.n_bytes;
  return tensors - weights_.experts.total_bytes();
}

uint64_t Model::decode_bytes_per_token() const {
  uint64_t bytes = dense_bytes();
  const gguf::TensorInfo* embedding = file_->find_tensor("token_embd.weight");
  const bool tied = file_->find_tensor("output.weight") == nullptr;
  if (embedding && !tied) bytes -= embedding->n_bytes - weights_.token_embedding.row_bytes();
  for (const auto& layer : weights_.experts.layers)
    bytes += uint64_t(layer.unit_bytes()) * uint64_t(config_.n_expert_used);
  return bytes;
}

}  // namespace strata
