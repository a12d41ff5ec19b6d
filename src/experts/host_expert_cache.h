// The host arena between the model file and a device's expert arena (--device cuda --mem): one
// block of host memory cut into slots of one size, each holding the bytes of one read (a unit or
// a slice, by its file offset), the least recently used slot not being copied from given up
// first. The disk tier (staged_file_reader.h) serves a read it holds by a copy from it, without
// the file. Bookkeeping only: filling a slot and copying from it are the caller's.
//
// Thread-safety: every function may be called from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace strata {

class HostExpertCache {
 public:
  // floor(capacity_bytes / slot_bytes) slots. REQUIRES: slot_bytes > 0.
  HostExpertCache(uint64_t capacity_bytes, size_t slot_bytes);
  ~HostExpertCache();
  HostExpertCache(const HostExpertCache&) = delete;
  HostExpertCache& operator=(const HostExpertCache&) = delete;

  int n_slots() const { return int(slots_.size()); }
  size_t slot_bytes() const { return slot_bytes_; }
  // The slots' memory, to page-lock; null without slots or when it could not be allocated.
  uint8_t* block() const { return block_; }
  size_t block_bytes() const { return slot_bytes_ * slots_.size(); }

  // A slot for the read of `length` bytes at `offset`: the one holding it (hit), or one given
  // up for it (its bytes to be filled); held until release(). bytes is null when every slot is
  // held by other reads (the caller reads around the cache).
  struct Lease {
    uint8_t* bytes = nullptr;
    bool hit = false;
    int slot = -1;
  };
  Lease acquire(uint64_t offset, size_t length);
  // Done with the lease; `filled`: a missed slot now holds the read's bytes, else it holds
  // nothing (the fill failed).
  void release(const Lease& lease, bool filled);

  struct Counters {
    uint64_t hits = 0, misses = 0;
  };
  Counters counters() const;

 private:
  struct Slot {
    uint64_t offset = 0;
    size_t length = 0;
    bool holds = false;  // offset/length's bytes are in it
    int users = 0;
    std::list<int>::iterator recency;
  };

  size_t slot_bytes_;
  uint8_t* block_ = nullptr;
  mutable std::mutex mutex_;
  std::vector<Slot> slots_;
  std::list<int> recency_;                     // slots, most recently used first
  std::unordered_map<uint64_t, int> slot_of_;  // by offset, for slots that hold their read
  Counters counters_;
};

}  // namespace strata
