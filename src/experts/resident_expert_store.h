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
  void begin_layer(int layer, std::span<const int32_t> experts, bool prefill) override;
  uint64_t prefetch(int, std::span<const int32_t>, uint64_t) override { return 0; }
  Result<std::vector<ClaimedExpert>> claim_next(int layer) override;
  void release(int, std::span<const ClaimedExpert>) override {}
  void end_layer(int) override {}
  bool is_resident(int, int32_t) const override { return true; }
  ExpertStoreStats stats() const override { return stats_; }

 private:
  std::shared_ptr<const gguf::GgufFile> file_;
  ExpertLayout layout_;
  std::vector<int32_t> pending_;  // experts of the current layer not yet claimed
  ExpertStoreStats stats_;
};

// A unit's weights inside a memory image of the whole file.
ExpertUnit unit_in_file(const ExpertLayout& layout, const uint8_t* file_bytes, int layer,
                        int32_t expert);

}  // namespace strata
