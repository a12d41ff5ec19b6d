// Belady's MIN: the offline optimal replacement policy, which evicts the unit needed again the
// furthest in the future. It needs the whole future, so only `strata cachesim` uses it, as the
// bound a practical policy is measured against.
//
// Requests come in groups whose units must all be resident at once (the k experts one layer
// needs for a token): MIN never evicts a unit of the group being served. Furthest-in-future
// stays optimal with such groups: the exchange argument that proves it for single requests only
// ever swaps units outside the current request.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace strata {

// Whether each access hits in a cache of `capacity` units run by MIN, starting empty.
// `accesses` holds consecutive groups of `group_size` distinct units.
// REQUIRES: 1 <= group_size <= capacity, accesses.size() a multiple of group_size.
// O(n log capacity) time, O(n + largest unit) memory.
std::vector<uint8_t> belady_hits(std::span<const uint32_t> accesses, size_t group_size,
                                 size_t capacity);

}  // namespace strata
