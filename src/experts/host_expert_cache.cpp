#include "experts/host_expert_cache.h"

#include <cstdlib>

#include "base/check.h"

namespace strata {

HostExpertCache::HostExpertCache(uint64_t capacity_bytes, size_t slot_bytes)
    : slot_bytes_(slot_bytes) {
  STRATA_CHECK(slot_bytes > 0);
  const size_t n_slots = size_t(capacity_bytes / slot_bytes);
  if (n_slots == 0) return;
  // Page-aligned, slot_bytes being a multiple of the page where O_DIRECT reads land in slots.
  block_ =
      static_cast<uint8_t*>(std::aligned_alloc(4096, (n_slots * slot_bytes + 4095) / 4096 * 4096));
  if (!block_) return;
  slots_.resize(n_slots);
  for (int s = 0; s < int(n_slots); ++s)
    slots_[size_t(s)].recency = recency_.insert(recency_.end(), s);
}

HostExpertCache::~HostExpertCache() { std::free(block_); }

HostExpertCache::Lease HostExpertCache::acquire(uint64_t offset, size_t length) {
  const std::lock_guard lock(mutex_);
  int slot = -1;
  bool hit = false;
  if (const auto found = slot_of_.find(offset); found != slot_of_.end()) {
    Slot& s = slots_[size_t(found->second)];
    if (s.length == length) {
      slot = found->second;
      hit = true;
    } else if (s.users == 0) {  // another read at that offset: its bytes go
      s.holds = false;
      slot_of_.erase(found);
    }
  }
  if (slot < 0) {
    for (auto it = recency_.rbegin(); it != recency_.rend(); ++it) {
      Slot& s = slots_[size_t(*it)];
      if (s.users > 0) continue;
      if (s.holds) slot_of_.erase(s.offset);
      s = Slot{
          .offset = offset, .length = length, .holds = false, .users = 0, .recency = s.recency};
      slot = *it;
      break;
    }
  }
  if (slot < 0) return {};
  Slot& s = slots_[size_t(slot)];
  ++s.users;
  recency_.splice(recency_.begin(), recency_, s.recency);
  ++(hit ? counters_.hits : counters_.misses);
  return {block_ + size_t(slot) * slot_bytes_, hit, slot};
}

void HostExpertCache::release(const Lease& lease, bool filled) {
  if (lease.slot < 0) return;
  const std::lock_guard lock(mutex_);
  Slot& s = slots_[size_t(lease.slot)];
  --s.users;
  if (lease.hit || !filled) {
    if (!lease.hit) recency_.splice(recency_.end(), recency_, s.recency);  // the first to go
    return;
  }
  // Two misses of one read at once: the first to finish is kept, the other slot goes first.
  if (!slot_of_.emplace(s.offset, lease.slot).second) {
    recency_.splice(recency_.end(), recency_, s.recency);
    return;
  }
  s.holds = true;
}

HostExpertCache::Counters HostExpertCache::counters() const {
  const std::lock_guard lock(mutex_);
  return counters_;
}

}  // namespace strata
