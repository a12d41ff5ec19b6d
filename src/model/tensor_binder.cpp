#include "model/tensor_binder.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "gguf/tensor_types.h"
#include "model/tensor_data.h"

namespace strata {

std::string layer_tensor(int64_t layer, std::string_view suffix) {
  return fmt::format("blk.{}.{}", layer, suffix);
}

Status TensorBinder::error(std::string message) const {
  return Status::errorf("{}: {}", file_->name(), message);
}

Result<int64_t> TensorBinder::count(std::string_view suffix) const {
  const std::string key = fmt::format("{}.{}", arch_, suffix);
  if (!file_->has(key)) return error(fmt::format("missing hyper-parameter {}", key));
  STRATA_ASSIGN_OR_RETURN(const uint64_t value, file_->get_uint(key));
  if (value == 0 || value > (uint64_t(1) << 40))
    return error(fmt::format("hyper-parameter {} = {} is out of range", key, value));
  return int64_t(value);
}

Result<int64_t> TensorBinder::count_or(std::string_view suffix, int64_t fallback) const {
  if (!file_->has(fmt::format("{}.{}", arch_, suffix))) return fallback;
  return count(suffix);
}

Result<float> TensorBinder::real_or(std::string_view suffix, float fallback) const {
  const std::string key = fmt::format("{}.{}", arch_, suffix);
  if (!file_->has(key)) return fallback;
  STRATA_ASSIGN_OR_RETURN(const double value, file_->get_float(key));
  return float(value);
}

Result<const gguf::TensorInfo*> TensorBinder::find(const std::string& name,
                                                   const std::vector<int64_t>& expected) const {
  const gguf::TensorInfo* tensor = file_->find_tensor(name);
  if (!tensor) return error(fmt::format("missing tensor {}", name));
  if (tensor->shape != expected)
    return error(fmt::format("tensor {} has shape [{}], but the hyper-parameters imply [{}]", name,
                             fmt::join(tensor->shape, ", "), fmt::join(expected, ", ")));
  if (!find_quant_traits(tensor->type_id) || !find_quant_traits(tensor->type_id)->vec_dot_scalar) {
    const auto* info = gguf::find_tensor_type(tensor->type_id);
    return error(fmt::format("tensor {} has type {}, which Strata cannot compute with", name,
                             info ? info->name : std::string_view("?")));
  }
  return tensor;
}

Result<Matrix> TensorBinder::matrix(const std::string& name, int64_t n_in, int64_t n_out) const {
  STRATA_ASSIGN_OR_RETURN(const gguf::TensorInfo* tensor, find(name, {n_in, n_out}));
  const uint8_t* bytes = data_ ? data_->data(*tensor) : nullptr;
  if (data_ && !bytes) return error(fmt::format("tensor {} is not loaded", name));
  return Matrix{QuantType(tensor->type_id), bytes, n_in, n_out, data_ && data_->grouped(*tensor)};
}

Result<Vector> TensorBinder::vector(const std::string& name, int64_t n) const {
  STRATA_ASSIGN_OR_RETURN(const gguf::TensorInfo* tensor, find(name, {n}));
  const QuantTraits& traits = quant_traits(QuantType(tensor->type_id));
  Vector values(static_cast<size_t>(n));
  if (!data_) return values;
  const uint8_t* bytes = data_->data(*tensor);
  if (!bytes) return error(fmt::format("tensor {} is not loaded", name));
  traits.dequantize_row(bytes, values.data(), n);
  return values;
}

Result<ExpertTensorLayout> TensorBinder::experts(const std::string& name, int64_t n_in,
                                                 int64_t n_out, int64_t n_expert) const {
  STRATA_ASSIGN_OR_RETURN(const gguf::TensorInfo* tensor, find(name, {n_in, n_out, n_expert}));
  ExpertTensorLayout layout;
  layout.type = QuantType(tensor->type_id);
  layout.file_offset = tensor->offset;
  layout.expert_bytes = quant_traits(layout.type).row_bytes(n_in) * size_t(n_out);
  layout.n_in = n_in;
  layout.n_out = n_out;
  if (data_) {
    layout.resident = data_->data(*tensor);
    layout.grouped_rows = data_->grouped(*tensor);
  }
  return layout;
}

}  // namespace strata
