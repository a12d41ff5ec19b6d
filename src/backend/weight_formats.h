// The formats of a model's weights, as a backend sizes its scratch by them: the format an
// activation is converted to before a product depends on the weight's format.
#pragma once

#include <vector>

#include "quant/quant_type.h"

namespace strata {

struct LayerFormats {
  QuantType q = QuantType::kF32, k = QuantType::kF32, v = QuantType::kF32, o = QuantType::kF32;
  QuantType router = QuantType::kF32;
  QuantType gate = QuantType::kF32, up = QuantType::kF32, down = QuantType::kF32;  // routed
  bool shared_expert = false;
  QuantType shared_gate = QuantType::kF32, shared_up = QuantType::kF32,
            shared_down = QuantType::kF32;
};

struct WeightFormats {
  std::vector<LayerFormats> layers;
  QuantType output = QuantType::kF32;
};

}  // namespace strata
