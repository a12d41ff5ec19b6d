#include "experts/misses_on_host.h"

#include <algorithm>

namespace strata {

int MissesOnHost::count(int misses, uint64_t unit_bytes, uint64_t bytes_copying) const {
  const int most = std::clamp(misses, 0, std::max(max_per_layer, 0));
  if (copy_bytes_per_s <= 0 || compute_bytes_per_s <= 0) return most;
  auto finish_s = [&](int on_host) {
    const double copies =
        double(bytes_copying + uint64_t(misses - on_host) * unit_bytes) / copy_bytes_per_s;
    const double host =
        on_host > 0 ? handoff_s + double(uint64_t(on_host) * unit_bytes) / compute_bytes_per_s
                    : 0.0;
    return std::max(copies, host);
  };
  int best = 0;
  for (int on_host = 1; on_host <= most; ++on_host)
    if (finish_s(on_host) < finish_s(best)) best = on_host;
  return best;
}

}  // namespace strata
