// Memory for the expert arena's slots (experts/expert_arena.h), made by the backend that
// computes with them: host pages for the CPU, device memory for a GPU. The arena decides the
// slots' sizes and what lies where inside a slot; this decides where the bytes live.
//
// Slots in host memory are filled by reads landing in them. Slots in a device's memory are
// filled by write_from_host() from a host tier that holds the experts (experts/host_tier_reader.h),
// and a slot's old unit may still be read by computations the backend has queued but not run:
// the store says when it let go of a unit (released()), and a later write into its slot waits
// for the work queued until then, and for nothing else. A write from memory that stays as it is
// (CopySource::kHeld) may still be running when it returns: the store says when it hands the
// slot's unit out (claimed()), and the work the backend queues after that waits for the write,
// so the copies of the host tier queue back to back and no thread waits for the bus.
//
// Thread-safety: a slot's bytes are written by one I/O thread at a time and read by the backend
// under the expert store's protocol; released() and claimed() are called by the compute thread,
// between the writes of the slot they name.
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

// What becomes of write_from_host()'s source after the call.
enum class CopySource {
  kReusedAfterReturn,  // a staging buffer: the bytes are in the slot when the call returns
  kHeld,               // a host tier's experts, unchanged while the arena lives
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

  // Copies `bytes` of host memory to `destination`, inside a slot (read_target's address and
  // on); with kReusedAfterReturn they are there when it returns. Host memory: a memcpy.
  virtual Status write_from_host(uint8_t* destination, const void* source, size_t bytes,
                                 CopySource source_kind);
  // The unit in slot `slot` of class `size_class` is handed out: the backend's work queued from
  // now on may read it, and waits for the slot's writes where they may still be running.
  virtual Status claimed(int size_class, int slot) {
    (void)size_class;
    (void)slot;
    return Status();
  }
  // The units in `slots` of class `size_class` will not be computed with again after the
  // backend's work queued so far.
  virtual void released(int size_class, std::span<const int> slots) {
    (void)size_class;
    (void)slots;
  }
  // Host memory write_from_host() will read from again and again (a host tier): made fast to
  // copy from where the backend can (page-locked for a GPU). False where it stays as it is.
  virtual bool pin_source(const void* host, size_t bytes) {
    (void)host;
    (void)bytes;
    return false;
  }
};

// Makes the slots of an arena: the backend's make_expert_slot_memory, or host memory in tests.
using SlotMemoryMaker = std::function<Result<std::unique_ptr<ExpertSlotMemory>>(
    std::span<const SlotClassShape> classes, size_t alignment)>;

}  // namespace strata
