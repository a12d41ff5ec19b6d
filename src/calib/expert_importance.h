// The importance weights `quantize --calib` hands the Q2_0 quantizer (model/requantize.h): for
// gate and up, E[x^2] of each layer's routed tokens pooled over its experts (weighted by their
// token counts: per expert, rare experts' few tokens would make noisy weights); for down, each
// expert's own E[h^2], whose channels differ from expert to expert.
#pragma once

#include "calib/expert_calibration.h"
#include "model/requantize.h"

namespace strata {

// The returned function owns what it needs of `calibration`.
ExpertImportance expert_importance(ExpertCalibration calibration);

}  // namespace strata
