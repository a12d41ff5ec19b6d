#include "experts/expert_layout.h"

namespace strata {

uint64_t ExpertLayout::total_bytes() const {
  uint64_t total = 0;
  for (const auto& layer : layers) total += uint64_t(layer.unit_bytes()) * uint64_t(n_expert);
  return total;
}

}  // namespace strata
