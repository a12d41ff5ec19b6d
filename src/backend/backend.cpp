#include "backend/backend.h"

#include "base/check.h"

namespace strata {

// Backends that route in place override both; the layer loop asks routes_in_place() first.
void Backend::route_and_compute_experts(int, const Matrix&, Activations, const RouteRequest&,
                                        std::span<const ExpertMatrices>, Activations) {
  STRATA_CHECK(routes_in_place());
}

RouteResult Backend::routed_in_place(int) {
  STRATA_CHECK(routes_in_place());
  return {};
}

}  // namespace strata
