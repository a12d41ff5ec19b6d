// The disk tier of an expert arena in a device's memory: each read of the arena's I/O engine
// goes to the model file (O_DIRECT where the file system allows it) into a page-locked staging
// buffer of the reading thread, the slices in it are put into the row order the backend
// computes with, and the bytes are copied into the device's slot
// (ExpertSlotMemory::write_from_host). Host memory holds a staging buffer per reading thread,
// not the experts: the tier for a model whose experts do not fit in host memory (--mem).
//
// With a host arena (host_expert_cache.h: host memory left under --mem), each read's bytes are
// kept there as well, in the backend's row order, and a read it still holds is a copy from it
// without the file.
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
#include "experts/host_expert_cache.h"

namespace strata {

class StagedFileReader final : public FileReader {
 public:
  // Rewrites one slice, as read from the file, into the row order the backend computes with
  // (the slice's layout says which: grouped_after_read() or ungrouped_after_read()).
  using ToComputeOrder = std::function<void(uint8_t* slice, const ExpertTensorLayout& tensor)>;

  // `file` reads the model (open_file_reader). Staging buffers hold the largest read the arena
  // makes of `layout` at this reader's alignment. `host_arena_bytes`: the host arena's share of
  // host memory (0: none), in slots of staging_bytes().
  StagedFileReader(std::shared_ptr<FileReader> file, const ExpertLayout& layout,
                   ToComputeOrder to_compute_order, uint64_t host_arena_bytes = 0);
  // The staging buffers' bytes for `layout` read from `file`, which the host arena's slots take
  // too.
  static size_t staging_bytes_for(const FileReader& file, const ExpertLayout& layout);
  ~StagedFileReader() override;

  // Where reads go: the slots the arena made, which also page-lock the staging buffers, of
  // which `n_readers` (the threads that read at once) are made here; a thread beyond them gets
  // one of its own on its first read. REQUIRES: called before the first read; `memory` outlives
  // the reads.
  Status write_into(ExpertSlotMemory& memory, int n_readers);
  // Whether every staging buffer made so far, and the host arena, are page-locked.
  bool staging_pinned() const;
  // Bytes of one staging buffer.
  size_t staging_bytes() const { return staging_bytes_; }
  // The host arena's slots (0: none) and its hits and misses so far.
  int host_arena_slots() const { return host_arena_ ? host_arena_->n_slots() : 0; }
  HostExpertCache::Counters host_arena_counters() const;

  const std::string& path() const override { return file_->path(); }
  uint64_t size() const override { return file_->size(); }
  static constexpr size_t kAlignment = 256;
  size_t alignment() const override { return kAlignment; }
  bool direct() const override { return file_->direct(); }
  Status read(void* destination, uint64_t offset, size_t length) override;

 private:
  // The read's bytes from the file into `buffer` (staging_bytes() of them, page-aligned), its
  // slices in the backend's row order; they start at buffer + offset % the file's alignment.
  Status read_in_compute_order(uint8_t* buffer, uint64_t offset, size_t length);
  Status copy_into_slot(void* destination, const uint8_t* bytes, uint64_t offset, size_t length);
  Status read_through_staging(void* destination, uint64_t offset, size_t length);
  uint8_t* new_staging();  // null when it cannot be allocated
  uint8_t* take_staging();
  void return_staging(uint8_t* buffer);

  std::shared_ptr<FileReader> file_;
  ToComputeOrder to_compute_order_;
  size_t file_alignment_;  // what the file's reads are widened to (1: none)
  // Slices whose rows the file has in another order than the backend's, by file offset.
  std::map<uint64_t, const ExpertTensorLayout*> reordered_slices_;
  size_t staging_bytes_ = 0;
  ExpertSlotMemory* memory_ = nullptr;
  mutable std::mutex mutex_;  // guards the buffers' lists and pinned_
  std::vector<uint8_t*> all_staging_, idle_staging_;
  bool pinned_ = true;
  std::unique_ptr<HostExpertCache> host_arena_;
};

}  // namespace strata
