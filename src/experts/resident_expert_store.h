// The all-resident expert store: every unit is read straight from the memory-mapped model
// file. The reference the streaming store must reproduce bit for bit.
#pragma once

#include <memory>

#include "experts/expert_store.h"
#include "gguf/gguf_file.h"

namespace strata {

class ResidentExpertStore final : public ExpertStore {
 public:
  ResidentExpertStore(std::shared_ptr<const gguf::GgufFile> file, ExpertLayout layout)
      : file_(std::move(file)), layout_(std::move(layout)) {}

  const ExpertLayout& layout() const override { return layout_; }
  void begin_layer(int, std::span<const int32_t>) override {}
  Result<ExpertUnit> acquire(int layer, int32_t expert) override;
  void end_layer(int) override {}

 private:
  std::shared_ptr<const gguf::GgufFile> file_;
  ExpertLayout layout_;
};

}  // namespace strata
