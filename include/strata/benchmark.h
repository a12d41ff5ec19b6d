// `strata bench`: decode and prefill speed, measured n times with variants interleaved, written
// as JSON with provenance (commit, sha256 of the binary and models, command line, environment,
// machine) and summarised as medians with min-max.
#pragma once

#include <strata/status.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace strata {

struct BenchmarkOptions {
  std::vector<std::string> model_paths;  // the variants, run interleaved
  std::vector<int64_t> prompt_lengths = {128};
  int64_t generated_tokens = 32;
  int repetitions = 3;
  int n_threads = 0;
  std::string prompt_file;  // prompt text (default: a built-in English passage)
  std::vector<std::string> command_line;
};

struct BenchmarkReport {
  std::string json;      // the full record
  std::string markdown;  // a table of medians and ranges
};

// `progress` receives a line per measurement.
Result<BenchmarkReport> run_benchmark(const BenchmarkOptions& options,
                                      const std::function<void(const std::string&)>& progress);

}  // namespace strata
