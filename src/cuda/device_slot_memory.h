// An expert arena's slots in device memory (backend/expert_slot_memory.h): one allocation per
// size class, filled by copies from the host tier on streams of their own, one per I/O thread
// copying at a time. released() records an event on the compute stream for the units it lets go
// (one of a ring, which each of their slots remembers), and a copy into a slot first makes its
// stream wait for the slot's, so a copy never overwrites a unit that kernels already queued
// still read (an event of the ring recorded again since makes it wait for later work too,
// never for less). Each slot has an event of its own that each copy into it records on its
// stream; the first claimed() after a copy from the host tier makes
// the compute stream wait for it, so such a copy returns once queued and only the kernels that
// read the slot wait for it.
// Nothing here synchronizes the whole device: a copy from a staging buffer waits for its own
// stream only.
//
// Thread-safety: write_from_host() from any thread (each stream is used by one thread at a
// time); released() and claimed() from the compute thread.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "backend/expert_slot_memory.h"
#include "cuda/cuda_memory.h"

namespace strata::cuda {

class DeviceSlotMemory final : public ExpertSlotMemory {
 public:
  // Slots start at multiples of max(alignment, 256), as cudaMalloc's allocations do.
  static Result<std::unique_ptr<DeviceSlotMemory>> create(std::span<const SlotClassShape> classes,
                                                          size_t alignment, int device,
                                                          cudaStream_t compute_stream);
  ~DeviceSlotMemory() override;

  uint8_t* read_target(int size_class, int slot) override { return slot_start(size_class, slot); }
  const uint8_t* compute_address(int size_class, int slot) const override {
    return slot_start(size_class, slot);
  }
  uint64_t bytes() const override { return bytes_; }
  Status write_from_host(uint8_t* destination, const void* source, size_t bytes,
                         CopySource source_kind) override;
  void released(int size_class, std::span<const int> slots) override;
  Status claimed(int size_class, int slot) override;
  bool pin_source(const void* host, size_t bytes) override;

  // Each class's allocation, for the backend to compute from in place.
  struct Block {
    const uint8_t* begin;
    size_t bytes;
  };
  std::vector<Block> blocks() const;

 private:
  struct SizeClass {
    DeviceBuffer memory;
    uint8_t* first = nullptr;  // slot 0
    size_t stride = 0;
    int n_slots = 0;
    std::vector<cudaEvent_t> filled;  // [slot]
    // [slot]: into release_events_; -1: never released.
    std::unique_ptr<std::atomic<int32_t>[]> released_by;
    // [slot]: a copy from the host tier was queued and the compute stream has not waited for it
    // yet (it waits once: its later work is in stream order after the wait).
    std::unique_ptr<std::atomic<bool>[]> copy_pending;
  };
  DeviceSlotMemory() = default;
  uint8_t* slot_start(int size_class, int slot) const;
  // The class and slot `address` lies in.
  std::pair<int, int> slot_of(const uint8_t* address) const;
  cudaStream_t take_stream();
  void return_stream(cudaStream_t stream);

  int device_ = 0;
  cudaStream_t compute_stream_ = nullptr;
  std::vector<SizeClass> classes_;
  static constexpr size_t kReleaseEvents = 1024;  // a few tokens' layers
  std::vector<cudaEvent_t> release_events_;
  size_t next_release_event_ = 0;
  uint64_t bytes_ = 0;
  std::mutex mutex_;  // guards idle_streams_
  std::vector<cudaStream_t> idle_streams_, all_streams_;
  std::vector<void*> pinned_;
};

}  // namespace strata::cuda
