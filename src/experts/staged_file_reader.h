// The disk tier of an expert arena in a device's memory: each read of the arena's I/O engine
// goes to the model file (O_DIRECT where the file system allows it) into a page-locked staging
// buffer of the reading thread, the slices in it are put into the row order the backend
// computes with, and the bytes are copied into the device's slot
// (ExpertSlotMemory::write_from_host). Host memory holds a staging buffer per reading thread,
// not the experts: the tier for a model whose experts do not fit in host memory (--mem).
//
// To the arena it is a FileReader of 256-byte alignment, like the host tier
// (host_tier_reader.h), so that each slice lands in its slot as aligned (modulo 256) as the file
// has it; the file's own alignment (4096 for O_DIRECT) is met inside the staging buffer, whose
// read is widened to it at both ends. The widening's bytes are copied too, into the slot's own
// widening, where nothing reads them.
//
// Thread-safety: read() may be called from several threads at once, each writing its own slot.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "backend/expert_slot_memory.h"
#include "experts/expert_layout.h"
#include "experts/file_reader.h"

namespace strata {

class StagedFileReader final : public FileReader {
 public:
  // Rewrites one slice, as read from the file, into the row order the backend computes with
  // (the slice's layout says which: grouped_after_read() or ungrouped_after_read()).
  using ToComputeOrder = std::function<void(uint8_t* slice, const ExpertTensorLayout& tensor)>;

  // `file` reads the model (open_file_reader). Staging buffers hold the largest read the arena
  // makes of `layout` at this reader's alignment.
  StagedFileReader(std::shared_ptr<FileReader> file, const ExpertLayout& layout,
                   ToComputeOrder to_compute_order);
  ~StagedFileReader() override;

  // Where reads go: the slots the arena made, which also page-lock the staging buffers, of
  // which `n_readers` (the threads that read at once) are made here; a thread beyond them gets
  // one of its own on its first read. REQUIRES: called before the first read; `memory` outlives
  // the reads.
  Status write_into(ExpertSlotMemory& memory, int n_readers);
  // Whether every staging buffer made so far is page-locked.
  bool staging_pinned() const;
  // Bytes of one staging buffer.
  size_t staging_bytes() const { return staging_bytes_; }

  const std::string& path() const override { return file_->path(); }
  uint64_t size() const override { return file_->size(); }
  static constexpr size_t kAlignment = 256;
  size_t alignment() const override { return kAlignment; }
  bool direct() const override { return file_->direct(); }
  Status read(void* destination, uint64_t offset, size_t length) override;

 private:
  uint8_t* new_staging();  // null when it cannot be allocated
  uint8_t* take_staging();
  void return_staging(uint8_t* buffer);

  std::shared_ptr<FileReader> file_;
  ToComputeOrder to_compute_order_;
  // Slices whose rows the file has in another order than the backend's, by file offset.
  std::map<uint64_t, const ExpertTensorLayout*> reordered_slices_;
  size_t staging_bytes_ = 0;
  ExpertSlotMemory* memory_ = nullptr;
  mutable std::mutex mutex_;  // guards the buffers' lists and pinned_
  std::vector<uint8_t*> all_staging_, idle_staging_;
  bool pinned_ = true;
};

}  // namespace strata
