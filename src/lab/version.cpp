#include <strata/version.h>

#include <fmt/format.h>

#include "base/cpu_features.h"
#include "lab/provenance.h"

namespace strata {

std::string version_line() {
  // The CUDA backend is not written yet (DESIGN.md §1), so no build has it.
  return fmt::format("strata {}, {} build, {} kernels, CUDA: not built", strata_build_commit(),
                     strata_build_type(), simd_kernels_name());
}

}  // namespace strata
