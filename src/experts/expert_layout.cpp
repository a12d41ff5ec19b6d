#include "experts/expert_layout.h"

namespace strata {

uint64_t ExpertLayout::total_bytes() const {
  uint64_t total = 0;
  for (const auto& layer : layers) total += uint64_t(layer.unit_bytes()) * uint64_t(n_expert);
  return total;
}

bool ExpertLayout::has_large_units() const {
  constexpr size_t kLargeUnitBytes = size_t(1) << 20;
  for (const auto& layer : layers)
    if (layer.unit_bytes() >= kLargeUnitBytes) return true;
  return false;
}

}  // namespace strata
