// `strata bench`'s measurements: the variants (one model under one memory setting) opened and
// warmed up, then run repetition by repetition with the variants interleaved, each run between
// probes of the memory's bandwidth and, where experts stream, the disk's.
#pragma once

#include <strata/benchmark.h>
#include <strata/expert_counters.h>
#include <strata/session.h>
#include <strata/status.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/mapped_file.h"
#include "cpu/thread_pool.h"
#include "experts/file_reader.h"

namespace strata {

// One run of a variant at one prompt length.
struct BenchmarkRun {
  double prefill_tokens_per_s = 0, decode_tokens_per_s = 0, decode_ms_per_token = 0;
  double memory_bandwidth = 0;  // bytes/s, probed just before the run
  double disk_bandwidth = 0;    // bytes/s, O_DIRECT 1 MiB reads: mean of the probes around the
                                // run (streaming only)
  double disk_before = 0, disk_after = 0;
  // bytes/s of the store's own reads (Session::expert_read_pattern), mean of the probes around
  // the run: what the disk gives for the reads decode issues, beside what it gives the probe.
  double unit_disk_bandwidth = 0;
  double page_cache_share = 0;  // of the model file resident in the page cache at the start
  // bytes/s of copies from page-locked host memory into the device, probed just before the
  // run, where a device arena is fed from host memory: its misses cross the bus, not the disk.
  double bus_bandwidth = 0;
  ExpertCounters decode;  // expert store counters over the decoded tokens
  int64_t decode_tokens = 0;
  double decode_device_wait_ms = 0;  // SessionStats::decode_device_wait_ms

  double per_token(double value) const;  // value / decoded tokens; 0 without any
  double disk_busy_share() const;        // of the decode's wall time, a read running
  double disk_delivered() const;         // bytes/s the disk delivered while it was busy
};

// What the summary reads from a variant's engine, kept from its last session: a cold run closes
// its session as soon as it is measured.
struct BenchmarkEngineFacts {
  std::string backend;
  double decode_weight_bytes_per_token = 0;
  std::optional<ExpertReadPattern> read_pattern;
  double kv_bytes_per_position = 0;
};

struct BenchmarkVariant {
  std::string budget_text;  // the memory setting as given: "none", "4G", "25%"
  std::string device;       // where it computes, as given: "cpu", "cuda", "auto"
  std::string cpu_experts;  // --cpu-experts as given; empty when the bench gave none
  SessionOptions options;   // the sessions' options: the model and its memory setting
  std::unique_ptr<Session> session;
  std::optional<BenchmarkEngineFacts> engine;
  std::vector<std::vector<BenchmarkRun>> runs;  // per prompt length
  std::vector<FilePart> parts;                  // the model's files
  std::shared_ptr<FileReader> reader;           // for the disk probe, when streaming
};

// What every measurement of one `strata bench` shares.
struct BenchmarkSetup {
  BenchmarkOptions options;
  std::string prompt_text;
  int n_threads = 0;
  int64_t n_ctx = 0;  // room for the longest prompt and the generated tokens
};

// Every (model, memory setting) of the options, in that order; warm benchmarks also open each
// variant's session and run it once.
Result<std::vector<BenchmarkVariant>> open_variants(const BenchmarkSetup& setup);

// options.repetitions rounds, each running every prompt length of every variant once (so a
// drift of the machine spreads over all variants alike); `progress` receives a line per run.
// `probe_pool` probes the memory bandwidth; it exists before the sessions open so that their
// memory plans count its threads.
Status measure_variants(const BenchmarkSetup& setup, ThreadPool& probe_pool,
                        std::vector<BenchmarkVariant>& variants,
                        const std::function<void(const std::string&)>& progress);

}  // namespace strata
