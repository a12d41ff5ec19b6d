// An expert arena's slots in device memory (backend/expert_slot_memory.h): one allocation per
// size class, filled by copies from the host tier on streams of their own, one per I/O thread
// copying at a time. Each slot has an event: released() records it on the compute stream, and
// a copy into the slot first makes its stream wait for it, so a copy never overwrites a unit
// that kernels already queued still read, and never waits for work queued later. Nothing here
// synchronizes the whole device: a copying thread waits for its own stream only.
//
// Thread-safety: write_from_host() from any thread (each stream is used by one thread at a
// time); released() from the compute thread.
#pragma once

#include <cuda_runtime_api.h>

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
  Status write_from_host(uint8_t* destination, const void* source, size_t bytes) override;
  void released(int size_class, int slot) override;
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
    std::vector<cudaEvent_t> released;  // [slot]
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
  uint64_t bytes_ = 0;
  std::mutex mutex_;  // guards idle_streams_
  std::vector<cudaStream_t> idle_streams_, all_streams_;
  std::vector<void*> pinned_;
};

}  // namespace strata::cuda
