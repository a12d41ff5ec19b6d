#include "model/architecture.h"

#include <array>

namespace strata {

Result<BoundModel> bind_qwen3moe(const TensorBinder& binder);
Result<BoundModel> bind_qwen2moe(const TensorBinder& binder);

std::span<const Architecture> architectures() {
  static constexpr std::array kArchitectures = {
      Architecture{"qwen3moe", bind_qwen3moe},
      Architecture{"qwen2moe", bind_qwen2moe},
  };
  return kArchitectures;
}

}  // namespace strata
