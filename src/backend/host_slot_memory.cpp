#include "backend/host_slot_memory.h"

#include <sys/mman.h>

#include <cstring>

#include "base/check.h"

namespace strata {

Result<std::unique_ptr<HostSlotMemory>> HostSlotMemory::create(
    std::span<const SlotClassShape> classes, size_t alignment) {
  auto memory = std::unique_ptr<HostSlotMemory>(new HostSlotMemory());
  memory->classes_.assign(classes.begin(), classes.end());
  for (const SlotClassShape& c : classes) {
    const size_t bytes = c.slot_bytes * size_t(c.n_slots);
    HugePageMemory block = allocate_on_huge_pages(bytes, alignment);
    if (!block) return Status::errorf("cannot allocate {} bytes for the expert arena", bytes);
      // Fault the pages in now: otherwise the first read into each slot pays for zeroing and
      // mapping it inside the decode loop (13 % of a 30B run's cycles), and the arena's memory
      // would show up in RSS only as it fills.
#ifdef MADV_POPULATE_WRITE
    if (::madvise(block.get(), bytes, MADV_POPULATE_WRITE) != 0)
#endif
      std::memset(block.get(), 0, bytes);
    memory->memory_.push_back(std::move(block));
    memory->bytes_ += bytes;
  }
  return memory;
}

Result<std::unique_ptr<ExpertSlotMemory>> make_host_slot_memory(
    std::span<const SlotClassShape> classes, size_t alignment) {
  STRATA_ASSIGN_OR_RETURN(auto memory, HostSlotMemory::create(classes, alignment));
  return std::unique_ptr<ExpertSlotMemory>(std::move(memory));
}

uint8_t* HostSlotMemory::slot_start(int size_class, int slot) const {
  const SlotClassShape& c = classes_[size_t(size_class)];
  STRATA_CHECK(slot >= 0 && slot < c.n_slots);
  return memory_[size_t(size_class)].get() + size_t(slot) * c.slot_bytes;
}

uint8_t* HostSlotMemory::read_target(int size_class, int slot) {
  return slot_start(size_class, slot);
}

const uint8_t* HostSlotMemory::compute_address(int size_class, int slot) const {
  return slot_start(size_class, slot);
}

}  // namespace strata
