// What `strata eval run` writes: a JSON record with provenance, a Markdown table and an SVG
// plot, from the scores of every position of every window.
//
// JSON record, field by field:
//   tool, version          "strata eval", 1
//   started, finished      UTC times
//   command_line           the process's arguments
//   binary, machine, environment   as `strata bench` records them (lab/provenance.h)
//   suite                  {path, sha256, windows, eval_dir}
//   candidate              the model file (path, sha256) and options that shape its logits,
//                          and the scoring mode (scoring.h describe_model)
//   reference              the same for the reference model, or the stored-logits directory
//                          and its manifest's description
//   candidate_stats        the candidate session's prefill and decode tokens and times, and
//                          its expert counters over decode steps (hits, misses, bytes read)
//   bootstrap              {resamples, seed, confidence} of the intervals
//   groups                 per domain in suite order, then "all": windows, positions, and the
//                          statistics over all their positions pooled (metrics.h
//                          ScoreSummary), plus kld_mean_ci and top1_ci: [lo, hi], the
//                          bootstrap interval over windows (bootstrap.h)
//   windows                per window: id, domain, document, start, prompt, scored, the same
//                          statistics over its own positions, and the sums `strata eval
//                          compare` pairs windows by: kld_sum, top1_count, ref_nll_sum,
//                          cand_nll_sum
#pragma once

#include <strata/status.h>

#include <string>
#include <vector>

#include "eval/bootstrap.h"
#include "eval/metrics.h"
#include "eval/scoring.h"
#include "eval/suite.h"

namespace strata::eval {

struct RunInputs {
  std::string suite_path;
  std::vector<std::string> command_line;
  std::string started;  // UTC
  BootstrapOptions bootstrap;
};

struct GroupSummary {
  std::string name;  // a domain, or "all"
  int64_t windows = 0;
  ScoreSummary scores;
  Interval kld_mean, top1;  // bootstrap over the group's windows
};

// Per domain in suite order, then "all".
std::vector<GroupSummary> summarize_groups(const Suite& suite, const ScoringResult& result,
                                           const BootstrapOptions& bootstrap);

Result<std::string> run_json(const Suite& suite, const ScoringResult& result,
                             const std::vector<GroupSummary>& groups, const RunInputs& inputs);
std::string run_markdown(const Suite& suite, const ScoringResult& result,
                         const std::vector<GroupSummary>& groups, const RunInputs& inputs);
// Mean KLD per domain with its bootstrap interval.
std::string run_svg(const ScoringResult& result, const std::vector<GroupSummary>& groups);

// "model.gguf, decode, --moce 0.85, --arena 25%": a run's candidate or reference in a few words.
std::string short_label(const nlohmann::json& description);
// The flag that bounded a candidate's memory: "--mem 2.00 GiB", "--arena 25%", or "" for none.
std::string budget_flag(const nlohmann::json& description);

std::string utc_now();

}  // namespace strata::eval
