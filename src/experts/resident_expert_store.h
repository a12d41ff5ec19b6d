// The all-resident expert store: every unit is where the model's tensor data holds it (the
// memory-mapped file, or a copy in memory). The reference the streaming store must reproduce
// bit for bit.
#pragma once

#include "experts/expert_store.h"

namespace strata {

class ResidentExpertStore final : public ExpertStore {
 public:
  // REQUIRES: every tensor of `layout` is resident (ExpertTensorLayout::resident).
  explicit ResidentExpertStore(ExpertLayout layout);

  const ExpertLayout& layout() const override { return layout_; }
  void begin_layer(int layer, std::span<const int32_t> experts, bool prefill) override;
  uint64_t prefetch(int, std::span<const int32_t>, uint64_t) override { return 0; }
  Result<std::vector<ClaimedExpert>> claim_next(int layer) override;
  void release(int, std::span<const ClaimedExpert>) override {}
  void end_layer(int) override {}
  bool is_resident(int, int32_t) const override { return true; }
  bool holds_every_expert() const override { return true; }
  ExpertCounters stats() const override { return stats_; }

 private:
  ExpertLayout layout_;
  std::vector<int32_t> pending_;  // experts of the current layer not yet claimed
  ExpertCounters stats_;
};

}  // namespace strata
