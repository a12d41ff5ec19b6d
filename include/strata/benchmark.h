// `strata bench`: decode and prefill speed, measured n times with variants interleaved, written
// as JSON with provenance (commit, sha256 of the binary and models, command line, environment,
// machine) and summarised as medians with min-max.
#pragma once

#include <strata/session.h>
#include <strata/status.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace strata {

struct BenchmarkOptions {
  std::vector<std::string> model_paths;
  // Per model, the memory settings to run under: "none" (every expert resident), a budget
  // ("4G"), or "N%": an arena holding N % of the model's expert units (SessionOptions::
  // arena_share). Every (model, setting) is a variant; variants run interleaved.
  std::vector<std::string> memory_budgets = {"none"};
  // Where each (model, memory setting) computes: "cpu", "cuda", "auto"; every device is a
  // variant of its own. Empty: session.device alone.
  std::vector<std::string> devices;
  // Per (model, memory setting, device), how many of the misses of an arena in a device's memory
  // the CPU computes (SessionOptions::cpu_experts): "auto", "off" or a count; every setting is a
  // variant of its own. Empty: session.cpu_experts alone.
  std::vector<std::string> cpu_experts;
  std::vector<int64_t> prompt_lengths = {128};
  int64_t generated_tokens = 32;
  int repetitions = 3;
  std::string prompt_file;  // prompt text (default: a built-in English passage)
  // Cold runs: a fresh session for every run and the page cache dropped before it (needs
  // root); the page-cache residency of the model file is measured before each run to show
  // the drop took effect. Warm runs (default) reuse one session per variant after a warm-up.
  bool cold = false;
  // Template for the sessions: threads, context, MoCE, read-ahead, I/O, cache policy.
  SessionOptions session;
  std::vector<std::string> command_line;
};

struct BenchmarkReport {
  std::string json;      // the full record
  std::string markdown;  // a table of medians and ranges
  // An SVG bar chart per variant and prompt length: decode as a share of its bound (median,
  // min-max whiskers) and, for streaming variants, the share of the decode the disk was busy.
  std::string svg;
};

// `progress` receives a line per measurement.
Result<BenchmarkReport> run_benchmark(const BenchmarkOptions& options,
                                      const std::function<void(const std::string&)>& progress);

}  // namespace strata
