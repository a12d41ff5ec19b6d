// Top-k selection for routers and samplers.
#pragma once

#include <cstdint>

namespace strata {

// Writes the indices of the k largest of values[0, n) to out, largest first; equal values are
// ordered by index (lower first), so the choice is deterministic. REQUIRES: 0 < k <= n.
void top_k(const float* values, int64_t n, int k, int32_t* out);

}  // namespace strata
