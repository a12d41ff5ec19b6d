// How many of a decode layer's misses an expert arena in a device's memory leaves where they lie,
// in host memory, for the host's CPU to compute (--cpu-experts), instead of copying them over the
// bus: the count at which the copies and the CPU's work end soonest, by rates measured once when
// the engine starts, so that for the rest of the run the choice is a function of the routes.
#pragma once

#include <cstdint>

namespace strata {

struct MissesOnHost {
  // At most this many a layer; 0: none.
  int max_per_layer = 0;
  // Bytes per second a copy into the device moves, and bytes of expert units per second the
  // host's CPU computes a decode token's rows at, with a fixed cost per layer (handing the work
  // over, its rows back to the device). Without rates, max_per_layer itself (while there are
  // that many misses).
  double copy_bytes_per_s = 0, compute_bytes_per_s = 0, handoff_s = 0;

  bool enabled() const { return max_per_layer > 0; }
  // Of `misses` units of unit_bytes each, with `bytes_copying` still on their way to the device
  // for the layer (late read-aheads), how many the CPU computes: the fewest that minimise
  // max(the copies' time, the CPU's time).
  int count(int misses, uint64_t unit_bytes, uint64_t bytes_copying) const;
};

}  // namespace strata
