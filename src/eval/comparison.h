// `strata eval compare A.json B.json`: two candidates scored on the same suite windows (two
// `strata eval run` records), compared window by window. The differences A - B in mean KLD and
// in top-1 agreement get a paired bootstrap interval over windows (bootstrap.h): a window's
// positions are resampled together for both candidates, so what the windows share (a hard
// passage is hard for both) cancels.
//
// JSON record: tool "strata eval compare", version 1, command_line, binary, a and b ({path,
// candidate, reference} of each record), same_reference (whether both were scored against the
// same reference description), bootstrap {resamples, seed, confidence}, and groups: per domain
// and "all", {name, windows, positions, kld_mean_a, kld_mean_b, kld_mean_diff, kld_mean_diff_ci
// [lo, hi], top1_a, top1_b, top1_diff, top1_diff_ci, ppl_cand_a, ppl_cand_b}.
#pragma once

#include <strata/status.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "eval/bootstrap.h"
#include "eval/run_record.h"

namespace strata::eval {

struct ComparisonGroup {
  std::string name;  // a domain, or "all"
  int64_t windows = 0, positions = 0;
  double kld_a = 0, kld_b = 0, top1_a = 0, top1_b = 0, ppl_a = 0, ppl_b = 0;
  Interval kld_diff, top1_diff;  // A - B
};

// An error unless both records scored the same windows (ids, domains, positions).
Result<std::vector<ComparisonGroup>> compare_runs(const RunRecord& a, const RunRecord& b,
                                                  const BootstrapOptions& bootstrap);

bool same_reference(const RunRecord& a, const RunRecord& b);

std::string comparison_json(const RunRecord& a, const RunRecord& b,
                            const std::vector<ComparisonGroup>& groups,
                            const BootstrapOptions& bootstrap,
                            const std::vector<std::string>& command_line);
std::string comparison_markdown(const RunRecord& a, const RunRecord& b,
                                const std::vector<ComparisonGroup>& groups,
                                const BootstrapOptions& bootstrap);
// Difference in mean KLD per domain with its paired interval.
std::string comparison_svg(const RunRecord& a, const RunRecord& b,
                           const std::vector<ComparisonGroup>& groups);

}  // namespace strata::eval
