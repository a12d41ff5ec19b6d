// The seam between the model's MoE math and wherever expert weights live (DESIGN.md §3).
//
// For each MoE layer the model calls begin_layer() with the experts its router picked, then
// acquire() for each of them, computes, and end_layer() when the layer's output is complete.
// A unit returned by acquire() stays valid until end_layer(). Errors (a failed read) surface
// from acquire(), at a deterministic point: when the expert is claimed.
//
// Thread-safety: called from the session's compute thread only.
#pragma once

#include <strata/status.h>

#include <span>

#include "experts/expert_layout.h"

namespace strata {

class ExpertStore {
 public:
  virtual ~ExpertStore() = default;

  virtual const ExpertLayout& layout() const = 0;
  // The experts layer `layer` needs now (union over the tokens of the batch).
  virtual void begin_layer(int layer, std::span<const int32_t> experts) = 0;
  // Blocks until the unit is resident.
  virtual Result<ExpertUnit> acquire(int layer, int32_t expert) = 0;
  virtual void end_layer(int layer) = 0;
};

}  // namespace strata
