#include <strata/version.h>

#include <fmt/format.h>

#include "backend/cuda_backend.h"
#include "base/cpu_features.h"
#include "lab/provenance.h"

namespace strata {

std::string version_line() {
  return fmt::format("strata {}, {} build, {} kernels, CUDA: {}", strata_build_commit(),
                     strata_build_type(), simd_kernels_name(),
                     cuda_backend_built() ? "built" : "not built");
}

}  // namespace strata
