// The CUDA backend's entry points. src/cuda/ defines them where the build has CUDA; elsewhere
// src/no_cuda/ does, refusing with one line, so that callers never test for the build.
#pragma once

#include <strata/status.h>

#include <memory>

#include "backend/backend.h"

namespace strata {

// Whether this build has the CUDA backend.
bool cuda_backend_built();
// A backend on CUDA device `device` (0, 1, ...).
Result<std::unique_ptr<Backend>> make_cuda_backend(const ModelShape& shape, int device);

}  // namespace strata
