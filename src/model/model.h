// A loaded model: the file, its hyper-parameters and its bound weights. Immutable after load;
// sessions share it.
#pragma once

#include <strata/status.h>

#include <memory>

#include "backend/weight_formats.h"
#include "gguf/gguf_file.h"
#include "model/model_config.h"
#include "model/weights.h"

namespace strata {

class TensorData;

class Model {
 public:
  // Binds the file's tensors for its architecture. Errors name the file and the problem
  // (unknown architecture, missing key or tensor, a shape that disagrees with the
  // hyper-parameters, a tensor format Strata cannot compute with).
  // `data` holds the tensors' bytes (MappedTensorData over `file` when null; it must outlive
  // the model otherwise).
  static Result<std::shared_ptr<const Model>> load(
      std::shared_ptr<const gguf::GgufFile> file, std::shared_ptr<const TensorData> data = nullptr);
  // Hyper-parameters and expert layout, every shape checked, no tensor data read: what a
  // memory plan needs before loading.
  static Result<std::shared_ptr<const Model>> describe(std::shared_ptr<const gguf::GgufFile> file);

  const gguf::GgufFile& file() const { return *file_; }
  std::shared_ptr<const gguf::GgufFile> shared_file() const { return file_; }
  const ModelConfig& config() const { return config_; }
  const ModelWeights& weights() const { return weights_; }
  // The formats of the weights, for the backend's scratch.
  WeightFormats weight_formats() const;
  // Bytes of everything but the routed experts (what must stay resident).
  uint64_t dense_bytes() const;
  // Weight bytes one decode step reads: every dense matrix but the embedding table (one row),
  // plus n_expert_used expert units per layer. The bound decode speed is measured against.
  uint64_t decode_bytes_per_token() const;

 private:
  static Result<std::shared_ptr<const Model>> bind(std::shared_ptr<const gguf::GgufFile> file,
                                                   std::shared_ptr<const TensorData> data,
                                                   bool shapes_only);

  std::shared_ptr<const gguf::GgufFile> file_;
  std::shared_ptr<const TensorData> data_;
  ModelConfig config_;
  ModelWeights weights_;
};

}  // namespace strata
