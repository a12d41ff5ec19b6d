// The host tier of an expert arena in a device's memory: every routed expert held in host
// memory (the model's tensor data, read in as the resident engine reads it), and the reads of
// the arena's I/O engine served from there by copying into the device's slots
// (ExpertSlotMemory::write_from_host): a read returns once its copy is queued (CopySource::kHeld),
// and the kernels that compute with the unit wait for it on the device. A FileReader over the model
// file's offsets, so the streaming store, its engine, priorities, cancellation and statistics work
// unchanged; only where the bytes come from differs.
//
// Reads are aligned to 256 bytes as the arena widens them, so that each slice lands in its slot
// as aligned (modulo 256) as the file has it, which the device's kernels rely on: a read is one
// expert's slice, or one unit's three slices where the layout reads a unit as one range (those
// lie in host memory as in the file: create() checks), widened to 256 at both ends. Only the
// slices' own bytes are copied; the widening's bytes in the slot are never read. The slices are
// in the row order the backend computes with, not necessarily the file's.
//
// Thread-safety: read() may be called from several threads at once, each writing its own slot.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "backend/expert_slot_memory.h"
#include "experts/expert_layout.h"
#include "experts/file_reader.h"

namespace strata {

class HostTierReader final : public FileReader {
 public:
  // REQUIRES: every slice of `layout` is resident (ExpertTensorLayout::resident), and stays so
  // while the reader lives. Errors: a unit read as one range whose slices do not lie in host
  // memory as in the file.
  static Result<std::unique_ptr<HostTierReader>> create(const ExpertLayout& layout,
                                                        std::string path, uint64_t file_size);

  // Where reads go: the slots the arena made. REQUIRES: called before the first read; `memory`
  // outlives the reads (the store stops its engine before its arena goes).
  void write_into(ExpertSlotMemory& memory) { memory_ = &memory; }
  // The host memory every slice lies in, from the first slice's byte to the last's end: what
  // the device may pin.
  const uint8_t* first_byte() const { return first_; }
  size_t span_bytes() const { return size_t(last_ - first_); }

  const std::string& path() const override { return path_; }
  uint64_t size() const override { return file_size_; }
  static constexpr size_t kAlignment = 256;
  size_t alignment() const override { return kAlignment; }
  bool direct() const override { return false; }
  Status read(void* destination, uint64_t offset, size_t length) override;

 private:
  struct Slice {
    const uint8_t* host;
    size_t bytes;  // the slice's, or the unit's from its gate slice to its down slice's end
  };
  HostTierReader() = default;

  std::string path_;
  uint64_t file_size_ = 0;
  std::map<uint64_t, Slice> slices_;  // by file offset
  const uint8_t* first_ = nullptr;
  const uint8_t* last_ = nullptr;
  ExpertSlotMemory* memory_ = nullptr;
};

}  // namespace strata
