// The file `strata calibrate` writes (MODEL.calib): an ExpertCalibration as a GGUF file, so that
// it is read by the hardened, fuzzed GGUF parser and written atomically like a model.
//
// Metadata:
//   strata.calibration.format         "strata-expert-calibration"
//   strata.calibration.version        uint32, 1
//   strata.calibration.architecture   string, the model's general.architecture
//   strata.calibration.{n_layer, n_embd, n_ff, n_expert, n_expert_used, n_tokens, n_samples}
//                                     uint64
//   strata.calibration.routers_sha256 string, 64 hex digits (expert_calibration.h)
//   strata.calibration.documents      string array, the text it was made from
// Tensors per layer L (shapes innermost first, as GGUF writes them):
//   calib.L.input_mean_square     F32 [n_embd, n_expert]
//   calib.L.hidden_mean_square    F32 [n_ff, n_expert]
//   calib.L.tokens                I32 [n_expert]
//   calib.L.weighted_output_norm  F32 [n_expert]
//   calib.L.sample_inputs         F32 [n_embd, n_samples]
//   calib.L.sample_picks          I32 [n_expert_used, n_samples]
//   calib.L.sample_weights        F32 [n_expert_used, n_samples]
//   calib.L.sample_outputs        F32 [n_embd, n_expert_used * n_samples]
// Reading checks every key, shape and type, that statistics are finite and non-negative and
// picks name experts; any other file gets one line naming it and the first problem.
#pragma once

#include <strata/status.h>

#include <string>

#include "calib/expert_calibration.h"

namespace strata {

inline constexpr uint32_t kCalibrationVersion = 1;

// To `path`, atomically; the caller has checked the path (base/output_path.h).
Status write_calibration(const ExpertCalibration& calibration, const std::string& path);
Result<ExpertCalibration> read_calibration(const std::string& path);
// The same from bytes in memory (tests, fuzzing); `name` names them in errors.
Result<ExpertCalibration> parse_calibration(std::span<const uint8_t> bytes,
                                            const std::string& name);

// An error unless `calibration` was made on `model` (or on a file with the same routers and
// shape: its requantizations), naming the calibration file.
Status check_calibration_matches(const ExpertCalibration& calibration, const std::string& name,
                                 const CalibratedModel& model, const std::string& model_path);

}  // namespace strata
