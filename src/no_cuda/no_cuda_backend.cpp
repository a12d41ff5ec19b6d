// The CUDA backend of a build without CUDA: it refuses, with one line.
#include "backend/cuda_backend.h"

namespace strata {

bool cuda_backend_built() { return false; }

Result<std::unique_ptr<Backend>> make_cuda_backend(const ModelShape&, int) {
  return Status::error(
      "--device cuda: this strata was built without the CUDA backend (nvcc was not found when "
      "it was configured)");
}

}  // namespace strata
