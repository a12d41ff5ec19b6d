// Where the bytes of a model's tensors are: the memory-mapped file (everything resident, the
// page cache decides), or dense weights loaded into memory the budget counts (streaming mode:
// routed experts are read separately, into the expert arena).
//
// In GGUF MoE files the routed experts are the only 3-D tensors (ffn_*_exps, [n_expert][rows]
// [cols]); everything else is dense. LoadedTensorData relies on that rule.
#pragma once

#include <strata/status.h>

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>

#include "base/huge_page_memory.h"
#include "experts/file_reader.h"
#include "gguf/gguf_file.h"

namespace strata {

class TensorData {
 public:
  virtual ~TensorData() = default;
  // The tensor's bytes, or nullptr where this source does not hold them (experts, or when
  // only shapes are being checked).
  virtual const uint8_t* data(const gguf::TensorInfo& tensor) const = 0;
};

class MappedTensorData final : public TensorData {
 public:
  explicit MappedTensorData(const gguf::GgufFile& file) : file_(file) {}
  const uint8_t* data(const gguf::TensorInfo& tensor) const override {
    return file_.tensor_data(tensor);
  }

 private:
  const gguf::GgufFile& file_;
};

bool is_routed_expert_tensor(const gguf::TensorInfo& tensor);
// Bytes of every tensor that is not a routed-expert stack.
uint64_t dense_tensor_bytes(const gguf::GgufFile& file);

// Every dense tensor read with `reader` (O_DIRECT) into one aligned allocation.
class LoadedTensorData final : public TensorData {
 public:
  // `progress` receives bytes as they are read (may be null).
  static Result<std::unique_ptr<LoadedTensorData>> load(const gguf::GgufFile& file,
                                                        FileReader& reader,
                                                        class ProgressBar* progress);
  const uint8_t* data(const gguf::TensorInfo& tensor) const override;
  uint64_t bytes() const { return bytes_; }

 private:
  HugePageMemory memory_;
  uint64_t bytes_ = 0;
  std::unordered_map<std::string, const uint8_t*> tensors_;
};

}  // namespace strata
