// Expert store counters (DESIGN.md §3): what an expert store did, since it was created or over
// a span of a session (the difference of two readings). The store produces them
// (experts/expert_store.h); sessions, `strata run --stats`, `strata eval` and `strata bench`
// report them.
#pragma once

#include <cstdint>

namespace strata {

struct ExpertCounters {
  // The claims of units a layer computed, by where the unit was: resident when its layer began
  // (hits), loaded by a read-ahead that finished in time (read-ahead hits) or was still in
  // flight (late), or read on demand (misses).
  uint64_t hits = 0, readahead_hits = 0, late_readaheads = 0, misses = 0;
  // Of the misses, those a device's arena left in host memory for the host's CPU to compute
  // (--cpu-experts): never copied.
  uint64_t misses_on_host = 0;
  // Read-ahead reads started, and the predicted units never used and dropped.
  uint64_t readaheads_issued = 0, readaheads_wasted = 0;
  // bytes_read: every read, wasted read-aheads included. missed_bytes: the bytes of the claimed
  // units that were not resident when their layer began (misses, read-ahead hits, late
  // read-aheads), what even a perfect read-ahead must read; the I/O bound is the disk's
  // bandwidth over these.
  uint64_t bytes_read = 0, missed_bytes = 0;
  // With a device's arena under --mem: the reads its host arena served from host memory, and
  // those that went to the file (0 elsewhere).
  uint64_t host_arena_hits = 0, host_arena_misses = 0;
  // Time the compute thread spent blocked on expert reads; wall time with at least one expert
  // read running.
  double host_wait_ms = 0, disk_active_ms = 0;

  // (hits + read-ahead hits) / all claims; 0 without claims.
  double hit_rate() const {
    const uint64_t claims = hits + readahead_hits + late_readaheads + misses;
    return claims ? double(hits + readahead_hits) / double(claims) : 0.0;
  }
  ExpertCounters& operator+=(const ExpertCounters& other);
  // REQUIRES: `other` is an earlier reading of the same counters (none would go below zero).
  ExpertCounters& operator-=(const ExpertCounters& other);
  bool operator==(const ExpertCounters&) const = default;
};
// A counter added above belongs in for_each_expert_counter too.
static_assert(sizeof(ExpertCounters) == 13 * 8);

// Calls f(name, member) for every counter, `member` a pointer to it: the one list of the
// fields, which the arithmetic below and the JSON records (`expert_counters_json`) follow.
// Their names are the keys of those records.
template <class F>
void for_each_expert_counter(F&& f) {
  f("hits", &ExpertCounters::hits);
  f("readahead_hits", &ExpertCounters::readahead_hits);
  f("late_readaheads", &ExpertCounters::late_readaheads);
  f("misses", &ExpertCounters::misses);
  f("misses_on_host", &ExpertCounters::misses_on_host);
  f("readaheads_issued", &ExpertCounters::readaheads_issued);
  f("readaheads_wasted", &ExpertCounters::readaheads_wasted);
  f("bytes_read", &ExpertCounters::bytes_read);
  f("missed_bytes", &ExpertCounters::missed_bytes);
  f("host_arena_hits", &ExpertCounters::host_arena_hits);
  f("host_arena_misses", &ExpertCounters::host_arena_misses);
  f("host_wait_ms", &ExpertCounters::host_wait_ms);
  f("disk_active_ms", &ExpertCounters::disk_active_ms);
}

inline ExpertCounters& ExpertCounters::operator+=(const ExpertCounters& other) {
  for_each_expert_counter([&](const char*, auto member) { this->*member += other.*member; });
  return *this;
}

inline ExpertCounters& ExpertCounters::operator-=(const ExpertCounters& other) {
  for_each_expert_counter([&](const char*, auto member) { this->*member -= other.*member; });
  return *this;
}

}  // namespace strata
