// What `strata bench` reports of its runs: per variant and prompt length, the median and range
// of every measure over the repetitions, the decode's bound and its share of it.
#pragma once

#include <strata/session.h>
#include <strata/status.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lab/benchmark_measure.h"
#include "lab/summary_statistics.h"

namespace strata {

// The bound of a decode run, each run against its own probes: decode reads its weight bytes and
// the KV cache per token from memory, and a streaming one also its missed experts from disk; at
// best the two overlap, so the slower of them bounds it. Missed bytes, not bytes read: a wasted
// read-ahead is our cost, and must not lower the bound we are measured against.
struct DecodeBound {
  double weight_bytes = 0;           // per token, every expert resident
  double kv_bytes_per_position = 0;  // of the KV cache
  int64_t prompt_tokens = 0;

  // Decode step i attends over prompt + i + 1 positions, so the mean over a run's steps is
  // prompt + (steps + 1) / 2.
  double kv_bytes(const BenchmarkRun& r) const;
  double memory_bound(const BenchmarkRun& r) const;
  // Missed bytes at `rate` bytes/s; infinite without missed bytes.
  double missed_bound_at(const BenchmarkRun& r, double rate) const;
  // The missed bytes at the rate of where they come from: the bus for a device arena fed from
  // host memory (the run probed it), else the disk.
  double missed_bound(const BenchmarkRun& r) const;
  double bound(const BenchmarkRun& r) const;
  // The same with the disk's rate for the store's own reads: a diagnostic beside the bound.
  double unit_bound(const BenchmarkRun& r) const;
};

// One variant at one prompt length, over its runs. Per token: over the decoded tokens.
struct PromptLengthSummary {
  int64_t prompt_tokens = 0;
  Summary prefill_tokens_per_s, decode_tokens_per_s, decode_ms_per_token;
  Summary decode_compute_ms_per_token;      // the decode's time less its wait for experts
  Summary decode_device_wait_ms_per_token;  // of the decode's time, waiting for a device's work
  Summary hit_rate, bytes_read_per_token, missed_bytes_per_token, host_wait_ms_per_token;
  Summary misses_on_host_per_token;  // computed by the host's CPU (--cpu-experts)
  Summary kv_cache_bytes_per_token;
  Summary memory_gb_s, disk_mb_s, disk_mb_s_before, disk_mb_s_after, bus_gb_s;  // the probes
  Summary disk_busy_share, disk_delivered_mb_s, page_cache_share;
  Summary bound_tokens_per_s, fraction_of_bound;
  // What bounds it (medians): "memory", "disk" or "bus" (a device arena fed from host memory).
  std::string bound_kind = "memory";
  // Where experts stream: the probe of the store's own read pattern and the bound it gives.
  std::optional<Summary> unit_disk_mb_s, unit_bound_tokens_per_s, fraction_of_unit_bound;
  // A streaming variant's decode as a share of the same model's resident variant.
  std::optional<Summary> fraction_of_resident;
};

struct VariantSummary {
  std::string model_path, model_sha256, budget_text;
  std::string device;       // as given: "cpu", "cuda", "auto"
  std::string cpu_experts;  // as given, or empty
  std::string backend;      // what it ran on (Engine::backend_description)
  uint64_t memory_budget_bytes = 0;
  double arena_share = 0;
  double decode_weight_bytes_per_token = 0;
  std::optional<ExpertReadPattern> read_pattern;  // where experts stream
  std::vector<PromptLengthSummary> prompts;       // per prompt length, as measured
};

// REQUIRES: every variant measured (its session open, runs at every prompt length).
Result<VariantSummary> summarize_variant(const BenchmarkVariant& variant,
                                         const std::vector<BenchmarkVariant>& variants,
                                         const BenchmarkOptions& options);

}  // namespace strata
