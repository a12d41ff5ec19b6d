// The memory of the expert arena: fixed slots, each holding one expert unit (the gate, up and
// down slices of one expert in one layer), grouped into size classes — layers whose units
// have the same slice sizes share a class, so a file with mixed formats (e.g. Q4_K_M, where
// some layers keep ffn_down in Q6_K) packs its slots without waste.
//
// A slot holds each slice in a region widened to the reader's alignment, so O_DIRECT reads
// land in place with no bounce copy: the slice starts (file offset mod alignment) bytes into
// its region. Where the file holds each unit of a layer as one range (the unit layout,
// expert_layout.h), the slot is one region and a unit one read. The arena only maps units to bytes;
// which unit occupies which slot, pins and eviction belong to the store (streaming_expert_store.h).
//
// Thread-safety: immutable after create(); slot memory is written by I/O threads and read by
// compute threads under the store's protocol.
#pragma once

#include <strata/status.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "backend/expert_slot_memory.h"
#include "experts/expert_layout.h"
#include "experts/io_engine.h"

namespace strata {

class ExpertArena {
 public:
  struct SizeClass {
    std::array<size_t, 3> slice_bytes{};  // gate, up, down
    // Units lying in the file as one range of at most this many bytes are read with one
    // read; 0: three, one per slice (LayerExpertLayout::contiguous_unit_span).
    size_t unit_span = 0;
    std::vector<size_t> region_bytes;  // one region per read, widened for alignment
    size_t slot_bytes = 0;
    std::vector<int> layers;
    int n_slots = 0;
  };

  // Splits `budget_bytes` among the size classes in proportion to the bytes of all their
  // units, the slots made by `make_memory` (the backend's). Fails, saying how much is needed,
  // when a class would get fewer than `min_slots`.
  static Result<std::unique_ptr<ExpertArena>> create(const ExpertLayout& layout,
                                                     uint64_t budget_bytes, size_t alignment,
                                                     int min_slots,
                                                     const SlotMemoryMaker& make_memory);
  // The classes create() makes for this budget, each with its slot count (what the memory plan
  // shows). REQUIRES: budget_bytes >= minimum_bytes(layout, alignment, min_slots).
  static std::vector<SizeClass> plan(const ExpertLayout& layout, uint64_t budget_bytes,
                                     size_t alignment, int min_slots);
  // The smallest budget create() accepts.
  static uint64_t minimum_bytes(const ExpertLayout& layout, size_t alignment, int min_slots);
  // The budget at which every unit of the model has a slot.
  static uint64_t all_units_bytes(const ExpertLayout& layout, size_t alignment);

  const std::vector<SizeClass>& classes() const { return classes_; }
  int class_of_layer(int layer) const { return class_of_layer_[size_t(layer)]; }
  uint64_t bytes() const { return memory_->bytes(); }
  ExpertSlotMemory& memory() const { return *memory_; }
  int total_slots() const;

  struct UnitReads {
    std::array<ReadRange, IoEngine::kMaxRanges> storage;
    size_t count = 0;
    std::span<const ReadRange> ranges() const { return {storage.data(), count}; }
  };

  // Where unit (layer, expert) lives in slot `slot` of its layer's class, and the aligned
  // reads that fill it (clipped to the end of a file of `file_size` bytes).
  ExpertUnit unit_in_slot(int layer, int32_t expert, int slot) const;
  UnitReads reads_for(int layer, int32_t expert, int slot, uint64_t file_size) const;

 private:
  static std::vector<SizeClass> plan_classes(const ExpertLayout& layout, size_t alignment);

  ExpertLayout layout_;
  size_t alignment_ = 1;
  std::vector<SizeClass> classes_;
  std::vector<int> class_of_layer_;
  std::unique_ptr<ExpertSlotMemory> memory_;
};

}  // namespace strata
