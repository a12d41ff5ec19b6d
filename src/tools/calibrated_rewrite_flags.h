// The flags of the commands that rewrite a model by its calibration (heal, prune): those of
// model_rewrite_flags.h and --calib, checked together before any work.
#pragma once

#include "calib/calibration_file.h"
#include "tools/model_rewrite_flags.h"
#include "tools/output_files.h"

namespace strata::tools {

struct CalibratedRewriteFlags : ModelRewriteFlags {
  std::string calib_path;

  // The output checked against both inputs (base/output_path.h), then the calibration read.
  Result<ExpertCalibration> read_inputs() const {
    CommandInputs inputs;
    inputs.add_model(input_path).add_file("the calibration", calib_path);
    STRATA_RETURN_IF_ERROR(inputs.check_outputs({output_path}, force));
    return read_calibration(calib_path);
  }
};

inline void add_calibrated_rewrite_flags(CLI::App* command, CalibratedRewriteFlags& flags) {
  add_model_rewrite_flags(command, flags);
  command->add_option("--calib", flags.calib_path, "calibration of the model (strata calibrate)")
      ->required()
      ->check(CLI::ExistingFile);
}

}  // namespace strata::tools
