// Helpers for the architecture files: typed hyper-parameter reads under the architecture's key
// prefix, and tensor lookups that check the tensor's shape against the hyper-parameters and its
// format against what Strata can compute. Every error names the file and the key or tensor.
#pragma once

#include <strata/status.h>

#include <memory>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "model/weights.h"

namespace strata {

class TensorData;

class TensorBinder {
 public:
  // `data` resolves tensor bytes; null binds shapes only (matrices without data, 1-D weights
  // as zeros): enough to plan memory before anything is read.
  TensorBinder(std::shared_ptr<const gguf::GgufFile> file, std::string arch, const TensorData* data)
      : file_(std::move(file)), arch_(std::move(arch)), data_(data) {}

  const gguf::GgufFile& file() const { return *file_; }

  // "<arch>.<suffix>" as a positive integer / float; the optional forms return `fallback`
  // when the key is absent.
  Result<int64_t> count(std::string_view suffix) const;
  Result<int64_t> count_or(std::string_view suffix, int64_t fallback) const;
  Result<float> real_or(std::string_view suffix, float fallback) const;

  bool has_tensor(const std::string& name) const { return file_->find_tensor(name) != nullptr; }
  // A 2-D weight of shape {n_in, n_out} (ggml order: row length first).
  Result<Matrix> matrix(const std::string& name, int64_t n_in, int64_t n_out) const;
  // A 1-D weight of n floats, converted to float whatever its stored format.
  Result<Vector> vector(const std::string& name, int64_t n) const;
  // One slice (`stem`: ffn_gate, ffn_up or ffn_down) of layer `layer`'s routed experts: the
  // stacked tensor blk.<layer>.<stem>_exps.weight of shape {n_in, n_out, n_expert}, or, in the
  // unit layout (experts/expert_layout.h), the tensors blk.<layer>.<stem>.<e>.weight of shape
  // {n_in, n_out}, one per expert, all of one type.
  Result<ExpertTensorLayout> experts(int64_t layer, std::string_view stem, int64_t n_in,
                                     int64_t n_out, int64_t n_expert) const;

 private:
  Result<const gguf::TensorInfo*> find(const std::string& name,
                                       const std::vector<int64_t>& expected) const;
  Status error(std::string message) const;
  // Whether the data's bytes of `tensor` are grouped rows; an error where they are and this CPU
  // cannot compute with them in place.
  Result<bool> grouped_in_memory(const gguf::TensorInfo& tensor) const;

  std::shared_ptr<const gguf::GgufFile> file_;
  std::string arch_;
  const TensorData* data_;
};

// "blk.<layer>.<suffix>"
std::string layer_tensor(int64_t layer, std::string_view suffix);
// "blk.<layer>.<stem>.<expert>.weight": one expert's slice in the unit layout.
std::string expert_tensor(int64_t layer, std::string_view stem, int64_t expert);

}  // namespace strata
