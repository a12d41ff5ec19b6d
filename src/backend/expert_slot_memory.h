// Memory for the expert arena's slots (experts/expert_arena.h), made by the backend that
// computes with them: host pages for the CPU, device memory for a GPU. The arena decides the
// slots' sizes and what lies where inside a slot; this decides where the bytes live.
//
// Thread-safety: immutable after it is made; a slot's bytes are written by one I/O thread at a
// time and read by the backend under the expert store's protocol.
#pragma once

#include <strata/status.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>

namespace strata {

// One size class's slots: `n_slots` of `slot_bytes` each.
struct SlotClassShape {
  size_t slot_bytes = 0;
  int n_slots = 0;
};

class ExpertSlotMemory {
 public:
  virtual ~ExpertSlotMemory() = default;
  // Host memory a read of slot `slot` of class `size_class` lands in, aligned as the memory was
  // made: the slot itself where the backend computes from host memory.
  virtual uint8_t* read_target(int size_class, int slot) = 0;
  // Where the backend's kernels find that slot's bytes once its read has landed.
  virtual const uint8_t* compute_address(int size_class, int slot) const = 0;
  virtual uint64_t bytes() const = 0;
};

// Makes the slots of an arena: the backend's make_expert_slot_memory, or host memory in tests.
using SlotMemoryMaker = std::function<Result<std::unique_ptr<ExpertSlotMemory>>(
    std::span<const SlotClassShape> classes, size_t alignment)>;

}  // namespace strata
