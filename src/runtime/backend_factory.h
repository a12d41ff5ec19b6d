// The backend an engine computes on, by the name `--device` takes: "cpu", "cuda" or "auto"
// (CUDA where this build has it and a device answers, else the CPU).
#pragma once

#include <strata/status.h>

#include <memory>
#include <string_view>

#include "backend/backend.h"
#include "backend/weight_formats.h"

namespace strata {

struct BackendChoice {
  std::string_view device = "auto";
  int gpu = 0;        // CUDA device index
  int n_threads = 1;  // CPU compute threads (the CPU backend's pool; the host's share otherwise)
};

Result<std::unique_ptr<Backend>> make_backend(const ModelShape& shape, const WeightFormats& formats,
                                              const BackendChoice& choice);

}  // namespace strata
