// Replays expert traces (experts/lab/expert_trace.h) through a cache of expert units, the way the
// arena would serve them, to compare replacement policies offline (`strata cachesim`).
//
// The model of the arena (experts/streaming_expert_store.cpp): units are numbered
// layer * n_expert + expert; tokens are served in order, and within a token the layers in
// order. The experts one layer needs are a group needed at once: the resident ones are used
// (and pinned) first, then the missing ones are inserted in ascending expert order, each
// evicting the policy's victim among the units outside the group when the cache is full. The
// cache starts empty. Accesses are counted per unit a group needs.
//
// Prompt tokens are replayed like generated ones, one token at a time, unless prefill_chunk is
// set: then, as in the arena's prefill, the prompt is cut into chunks of that many tokens and
// each layer needs the union of its chunk's experts once (one access each). A union larger
// than the cache is served in consecutive groups of `capacity` units (the arena loads such a
// layer in waves, releasing units as it computes them; this is the simple form of that).
// The policy hears on_layer before each layer's first group, with prefill set for the groups
// whose units are scan inserts.
//
// Read-ahead (readahead > 0, traces with predictions): after a layer's group is served, the
// top `readahead` predictions of each of its tokens for the next layer (their union, by best
// rank and then expert id, as the forward pass makes it) are inserted speculatively, in that
// order: skipped if already here, else into a free slot or the slot of the policy's victim
// among the units outside the group, stopping when there is none. Speculative units are not
// the policy's; when their layer comes, the ones it needs are claimed (an access counted as a
// read-ahead hit, and on_insert for the policy) and the others are dropped. A layer loaded in
// several groups prefetches nothing (the arena has every slot pinned), and only its first
// group claims predictions. There is no clock: every claimed prediction counts, so read-ahead
// hits are an upper bound on the arena's timely ones (the arena's read-ahead hits plus its
// late read-aheads equal them).
#pragma once

#include <strata/status.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "experts/lab/expert_trace.h"

namespace strata {

struct CacheCounts {
  uint64_t accesses = 0;
  uint64_t hits = 0;
  uint64_t readahead_hits = 0;     // accesses served by a prediction
  uint64_t readaheads_issued = 0;  // speculative inserts
  uint64_t readaheads_wasted = 0;  // ... dropped unused

  double hit_rate() const { return accesses ? double(hits) / double(accesses) : 0.0; }
  // Hits and read-ahead hits per access.
  double served_rate() const {
    return accesses ? double(hits + readahead_hits) / double(accesses) : 0.0;
  }
  CacheCounts& operator+=(const CacheCounts& other) {
    accesses += other.accesses;
    hits += other.hits;
    readahead_hits += other.readahead_hits;
    readaheads_issued += other.readaheads_issued;
    readaheads_wasted += other.readaheads_wasted;
    return *this;
  }
};

// One trace through one cache: the accesses of the prompt's tokens and of generated tokens.
struct CacheRun {
  CacheCounts prompt;
  CacheCounts generated;

  CacheCounts total() const {
    CacheCounts sum = prompt;
    return sum += generated;
  }
  CacheRun& operator+=(const CacheRun& other) {
    prompt += other.prompt;
    generated += other.generated;
    return *this;
  }
};

struct ReplayOptions {
  size_t capacity = 0;         // units; at least trace.n_expert_used
  bool scan_prompt = false;    // units brought in for prompt tokens are inserted as scan units
  uint64_t prefill_chunk = 0;  // 0: prompt tokens one at a time; N: the arena's prefill (above)
  uint32_t readahead = 0;      // predictions per token prefetched; at most trace.n_expert_used
};

// Belady's MIN, which reads the trace's future: the bound for the practical policies. It
// never reads ahead (the readahead option does not apply to it).
inline constexpr std::string_view kMinPolicy = "min";

// The policies a trace can drive: all that make_policy() knows but "predicted", whose
// next-token estimates come from the model's hidden states, which traces do not record.
std::vector<std::string_view> replayable_policies();

// `policy` is one of replayable_policies(), or kMinPolicy.
Result<CacheRun> replay(const ExpertTrace& trace, std::string_view policy,
                        const ReplayOptions& options);

struct ArenaSize {
  std::string label;  // as given: "25%" or "128"
  size_t capacity;    // units
};

// A comma-separated list of arena sizes, each a percentage of `n_units` (rounded to the
// nearest unit) or a unit count; every size must hold `min_capacity` units.
Result<std::vector<ArenaSize>> parse_arena_sizes(std::string_view list, uint64_t n_units,
                                                 size_t min_capacity);

}  // namespace strata
