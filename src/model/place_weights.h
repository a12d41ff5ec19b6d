// Hands every weight of a loaded model to the backend that computes with it (Backend::place):
// each dense matrix and 1-D weight, and the routed experts its tensor data holds (all of them
// when every expert is resident; none when they stream into an arena).
#pragma once

#include <strata/status.h>

#include "backend/backend.h"
#include "model/model.h"

namespace strata {

// Ranges that follow each other in memory (the experts of a stacked tensor) are placed as one.
Status place_weights(const Model& model, Backend& backend);

}  // namespace strata
