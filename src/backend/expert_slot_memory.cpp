#include "backend/expert_slot_memory.h"

#include <cstring>

namespace strata {

Status ExpertSlotMemory::write_from_host(uint8_t* destination, const void* source, size_t bytes,
                                         CopySource) {
  std::memcpy(destination, source, bytes);
  return Status();
}

}  // namespace strata
