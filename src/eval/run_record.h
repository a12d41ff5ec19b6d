// A `strata eval run` record read back (by `eval compare` and `eval table`): the per-window sums
// that comparisons resample, beside the whole JSON for its descriptions.
#pragma once

#include <strata/status.h>

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace strata::eval {

struct RunWindow {
  std::string id, domain;
  int64_t positions = 0;
  double kld_sum = 0, cand_nll_sum = 0;
  int64_t top1_count = 0;
};

struct RunRecord {
  std::string path;
  nlohmann::json json;
  std::vector<RunWindow> windows;
};

// One line naming the file (`name`) when `text` is not a `strata eval run` record.
Result<RunRecord> parse_run_record(const std::string& text, const std::string& name);
Result<RunRecord> read_run_record(const std::string& path);

}  // namespace strata::eval
