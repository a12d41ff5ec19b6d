// Belady's MIN: the offline optimal replacement policy, which evicts the unit needed again the
// furthest in the future. It needs the whole future, so only `strata cachesim` uses it, as the
// bound a practical policy is measured against.
//
// Requests come in groups whose units must all be resident at once (the experts one layer
// needs for a token, or for a prefill chunk): MIN never evicts a unit of the group being
// served. Furthest-in-future stays optimal with such groups: the exchange argument that proves
// it for single requests only ever swaps units outside the current request.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace strata {

// Whether each access hits in a cache of `capacity` units run by MIN, starting empty.
// `accesses` holds consecutive groups of distinct units, of the sizes `group_sizes` lists.
// REQUIRES: every group size in 1..capacity; the sizes sum to accesses.size().
// O(n log capacity) time, O(n + largest unit) memory.
std::vector<uint8_t> belady_hits(std::span<const uint32_t> accesses,
                                 std::span<const uint32_t> group_sizes, size_t capacity);

}  // namespace strata
