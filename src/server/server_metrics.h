// What `strata serve` reports at GET /metrics, in the Prometheus text format (version 0.0.4):
// requests by endpoint and status, tokens (prompt, reused from a cached conversation,
// generated), time spent in prefill and decode, latencies as histograms, and the engine's state
// (queue, sequences, KV cache, expert arena and its counters) as the scheduler last saw it.
//
// Thread-safety: every member may be called from any thread.
#pragma once

#include <strata/expert_counters.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace strata::server {

// Cumulative buckets (le) of observed values.
class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);
  void observe(double value);
  // "# HELP", "# TYPE" and the _bucket, _sum and _count lines of `name`.
  void render(const std::string& name, const std::string& help, std::string& out) const;

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // per bound, then +Inf
  double sum_ = 0;
  uint64_t count_ = 0;
};

// The engine as the scheduler saw it after its last step.
struct EngineGauges {
  int parallel = 0;          // sequences that can decode together
  int active_sequences = 0;  // decoding now
  int queued_requests = 0;
  int64_t kv_tokens = 0;  // tokens held in the sessions' KV caches
  int64_t kv_capacity = 0;
  int64_t resident_experts = 0;  // expert units in the arena (or all, when resident)
  int64_t total_experts = 0;
  ExpertCounters experts;
};

// What a finished request did, for the counters and histograms.
struct RequestRecord {
  int64_t prompt_tokens = 0;
  int64_t reused_prompt_tokens = 0;
  int64_t completion_tokens = 0;
  double seconds = 0;              // received to last byte
  double first_token_seconds = 0;  // received to first token (0: none)
};

// Totals of the forward passes since the server started.
struct Throughput {
  uint64_t prefill_tokens = 0, decode_tokens = 0, generated_tokens = 0;
  double prefill_seconds = 0, decode_seconds = 0;
};

class ServerMetrics {
 public:
  ServerMetrics();

  void count_response(const std::string& endpoint, int status);
  void record_request(const RequestRecord& record);
  // A prefill of `tokens` or a decode step of `tokens` sequences that took `seconds`; what the
  // expert store did during the step (decode hit rates are reported apart from the prompts').
  void record_prefill(int64_t tokens, double seconds);
  void record_decode_step(int64_t tokens, double seconds, const ExpertCounters& experts);
  void record_cancelled();
  void set_engine(const EngineGauges& gauges);
  EngineGauges engine() const;
  Throughput throughput() const;

  std::string render() const;

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, int>, uint64_t> responses_;
  uint64_t prompt_tokens_ = 0, reused_prompt_tokens_ = 0, completion_tokens_ = 0;
  uint64_t prefill_tokens_ = 0, decode_tokens_ = 0, decode_steps_ = 0, cancelled_ = 0;
  double prefill_seconds_ = 0, decode_seconds_ = 0;
  Histogram request_seconds_, first_token_seconds_, decode_batch_;
  ExpertCounters decode_experts_;
  EngineGauges engine_;
};

}  // namespace strata::server
