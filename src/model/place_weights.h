// Hands every weight of a loaded model to the backend that computes with it (Backend::place):
// each dense matrix and 1-D weight, and the routed experts its tensor data holds (all of them
// when every expert is resident; none when they stream into an arena, or when they are a host
// tier that an arena in the backend's memory copies from).
#pragma once

#include <strata/status.h>

#include "backend/backend.h"
#include "model/model.h"

namespace strata {

// Ranges that follow each other in memory (the experts of a stacked tensor) are placed as one.
enum class PlacedExperts { kResident, kNone };
Status place_weights(const Model& model, Backend& backend,
                     PlacedExperts experts = PlacedExperts::kResident);

}  // namespace strata
