// Expert slots in host memory, for backends that compute from it (the CPU): one block per size
// class, on huge pages and faulted in when made, so that reads land in place (O_DIRECT) and
// kernels read the bytes where they landed.
#pragma once

#include <strata/status.h>

#include <memory>
#include <span>
#include <vector>

#include "backend/expert_slot_memory.h"
#include "base/huge_page_memory.h"

namespace strata {

class HostSlotMemory final : public ExpertSlotMemory {
 public:
  static Result<std::unique_ptr<HostSlotMemory>> create(std::span<const SlotClassShape> classes,
                                                        size_t alignment);

  uint8_t* read_target(int size_class, int slot) override;
  const uint8_t* compute_address(int size_class, int slot) const override;
  uint64_t bytes() const override { return bytes_; }

 private:
  uint8_t* slot_start(int size_class, int slot) const;

  std::vector<SlotClassShape> classes_;
  std::vector<HugePageMemory> memory_;  // one block per class
  uint64_t bytes_ = 0;
};

// HostSlotMemory::create as a SlotMemoryMaker.
Result<std::unique_ptr<ExpertSlotMemory>> make_host_slot_memory(
    std::span<const SlotClassShape> classes, size_t alignment);

}  // namespace strata
