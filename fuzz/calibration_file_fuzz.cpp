// libFuzzer target for the calibration files `quantize --calib`, `heal` and `prune` read
// (calib/calibration_file.h). A crash, a sanitizer report, an error that is not one line naming
// the file, or a calibration accepted with a statistic its reader promises to refuse (negative,
// not finite, a pick outside the experts, arrays of the wrong size) is a bug.
// Run with fuzz/run_fuzz.sh SECONDS.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/check.h"
#include "calib/calibration_file.h"

namespace {

constexpr std::string_view kName = "fuzz.calib";

void check_error_message(const std::string& message) {
  STRATA_CHECK(message.size() > kName.size() + 2);
  STRATA_CHECK(message.starts_with(kName) && message.substr(kName.size(), 2) == ": ");
  STRATA_CHECK(message.find_first_of("\n\r") == std::string::npos);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto parsed = strata::parse_calibration({data, size}, std::string(kName));
  if (!parsed.ok()) {
    check_error_message(parsed.status().message());
    return 0;
  }
  const strata::ExpertCalibration& c = parsed.value();
  STRATA_CHECK_EQ(int64_t(c.layers.size()), c.model.n_layer);
  for (const strata::LayerCalibration& layer : c.layers) {
    STRATA_CHECK_EQ(int64_t(layer.input_mean_square.size()), c.model.n_expert * c.model.n_embd);
    STRATA_CHECK_EQ(int64_t(layer.tokens.size()), c.model.n_expert);
    STRATA_CHECK_EQ(int64_t(layer.sample_picks.size()), c.n_samples * c.model.n_expert_used);
    for (float v : layer.input_mean_square) STRATA_CHECK(v >= 0 && std::isfinite(v));
    for (int32_t e : layer.sample_picks) STRATA_CHECK(e >= 0 && e < c.model.n_expert);
  }
  return 0;
}
