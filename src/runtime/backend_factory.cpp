#include "runtime/backend_factory.h"

#include "backend/cuda_backend.h"
#include "cpu/cpu_backend.h"

namespace strata {

Result<std::unique_ptr<Backend>> make_backend(const ModelShape& shape, const WeightFormats& formats,
                                              const BackendChoice& choice) {
  if (choice.device == "cuda") return make_cuda_backend(shape, choice.gpu);
  if (choice.device == "auto" && cuda_backend_built()) {
    Result<std::unique_ptr<Backend>> cuda = make_cuda_backend(shape, choice.gpu);
    if (cuda.ok()) return cuda;
  }
  if (choice.device != "cpu" && choice.device != "auto")
    return Status::errorf("--device {}: expected cpu, cuda or auto", choice.device);
  return make_cpu_backend(shape, formats, choice.n_threads);
}

}  // namespace strata
