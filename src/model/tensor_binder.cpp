#include "model/tensor_binder.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cpu/kernels/q4_0_groups.h"
#include "gguf/tensor_types.h"
#include "model/tensor_data.h"

namespace strata {

std::string layer_tensor(int64_t layer, std::string_view suffix) {
  return fmt::format("blk.{}.{}", layer, suffix);
}

std::string expert_tensor(int64_t layer, std::string_view stem, int64_t expert) {
  return fmt::format("blk.{}.{}.{}.weight", layer, stem, expert);
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
  if (!find_quant_traits(tensor->type_id) ||
      !find_quant_traits(tensor->type_id)->vec_dot_reference) {
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
  STRATA_ASSIGN_OR_RETURN(const bool grouped, grouped_in_memory(*tensor));
  return Matrix{QuantType(tensor->type_id), bytes, n_in, n_out, grouped};
}

Result<bool> TensorBinder::grouped_in_memory(const gguf::TensorInfo& tensor) const {
  if (!data_ || !data_->grouped(tensor)) return false;
  if (!groups_rows(QuantType(tensor.type_id), tensor.shape[1]))
    return error(fmt::format(
        "tensor {} has its rows grouped, and this CPU has no kernel for grouped rows (AVX-512 "
        "VNNI); they must be copied and ungrouped first (load_resident_tensor_data does)",
        tensor.name));
  return true;
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

Result<ExpertTensorLayout> TensorBinder::experts(int64_t layer, std::string_view stem, int64_t n_in,
                                                 int64_t n_out, int64_t n_expert) const {
  const std::string stacked = layer_tensor(layer, fmt::format("{}_exps.weight", stem));
  std::vector<const gguf::TensorInfo*> tensors;  // each expert's tensor, or the stack
  if (has_tensor(stacked) || !has_tensor(expert_tensor(layer, stem, 0))) {
    STRATA_ASSIGN_OR_RETURN(const gguf::TensorInfo* stack, find(stacked, {n_in, n_out, n_expert}));
    tensors.push_back(stack);
  } else {
    for (int64_t e = 0; e < n_expert; ++e) {
      STRATA_ASSIGN_OR_RETURN(const gguf::TensorInfo* tensor,
                              find(expert_tensor(layer, stem, e), {n_in, n_out}));
      tensors.push_back(tensor);
      if (tensors.back()->type_id != tensors.front()->type_id)
        return error(
            fmt::format("tensors {} and {} differ in type; Strata needs the experts of "
                        "a layer in one type",
                        tensors.front()->name, tensors.back()->name));
    }
  }
  ExpertTensorLayout layout;
  layout.type = QuantType(tensors.front()->type_id);
  layout.expert_bytes = quant_traits(layout.type).row_bytes(n_in) * size_t(n_out);
  layout.n_in = n_in;
  layout.n_out = n_out;
  for (int64_t e = 0; e < n_expert; ++e) {
    // A stack's experts follow each other; per-expert tensors are wherever the file put them.
    const gguf::TensorInfo& tensor = *tensors[tensors.size() == 1 ? 0 : size_t(e)];
    const uint64_t within = tensors.size() == 1 ? uint64_t(e) * layout.expert_bytes : 0;
    layout.file_offsets.push_back(tensor.offset + within);
    // A source that holds the dense weights only (streaming) holds no expert.
    const uint8_t* bytes = data_ ? data_->data(tensor) : nullptr;
    if (bytes) layout.resident.push_back(bytes + within);
  }
  if (layout.resident.size() != size_t(n_expert)) layout.resident.clear();
  STRATA_ASSIGN_OR_RETURN(layout.grouped_rows, grouped_in_memory(*tensors.front()));
  layout.grouped_in_file = grouped_in_file(*file_, *tensors.front());
  return layout;
}

}  // namespace strata
