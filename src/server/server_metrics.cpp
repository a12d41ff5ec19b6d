#include "server/server_metrics.h"

#include <fmt/format.h>

namespace strata::server {
namespace {

std::vector<double> latency_bounds() {
  return {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120};
}

void header(std::string& out, const std::string& name, const char* type, const std::string& help) {
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

template <class T>
void single(std::string& out, const std::string& name, const char* type, const std::string& help,
            T value) {
  header(out, name, type, help);
  out += fmt::format("{} {}\n", name, value);
}

double ratio(double a, double b) { return b > 0 ? a / b : 0.0; }

}  // namespace

Histogram::Histogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double value) {
  size_t bucket = 0;
  while (bucket < bounds_.size() && value > bounds_[bucket]) ++bucket;
  ++counts_[bucket];
  sum_ += value;
  ++count_;
}

void Histogram::render(const std::string& name, const std::string& help, std::string& out) const {
  header(out, name, "histogram", help);
  uint64_t cumulative = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cumulative += counts_[i];
    out += fmt::format("{}_bucket{{le=\"{}\"}} {}\n", name, bounds_[i], cumulative);
  }
  out += fmt::format("{}_bucket{{le=\"+Inf\"}} {}\n", name, count_);
  out += fmt::format("{}_sum {}\n{}_count {}\n", name, sum_, name, count_);
}

ServerMetrics::ServerMetrics()
    : request_seconds_(latency_bounds()),
      first_token_seconds_(latency_bounds()),
      decode_batch_({1, 2, 3, 4, 6, 8, 12, 16, 24, 32}) {}

void ServerMetrics::count_response(const std::string& endpoint, int status) {
  std::lock_guard lock(mutex_);
  ++responses_[{endpoint, status}];
}

void ServerMetrics::record_request(const RequestRecord& record) {
  std::lock_guard lock(mutex_);
  prompt_tokens_ += uint64_t(record.prompt_tokens);
  reused_prompt_tokens_ += uint64_t(record.reused_prompt_tokens);
  completion_tokens_ += uint64_t(record.completion_tokens);
  request_seconds_.observe(record.seconds);
  if (record.first_token_seconds > 0) first_token_seconds_.observe(record.first_token_seconds);
}

void ServerMetrics::record_prefill(int64_t tokens, double seconds) {
  std::lock_guard lock(mutex_);
  prefill_tokens_ += uint64_t(tokens);
  prefill_seconds_ += seconds;
}

void ServerMetrics::record_decode_step(int64_t tokens, double seconds,
                                       const ExpertCounters& experts) {
  std::lock_guard lock(mutex_);
  decode_experts_ += experts;
  decode_tokens_ += uint64_t(tokens);
  ++decode_steps_;
  decode_seconds_ += seconds;
  decode_batch_.observe(double(tokens));
}

void ServerMetrics::record_cancelled() {
  std::lock_guard lock(mutex_);
  ++cancelled_;
}

void ServerMetrics::set_engine(const EngineGauges& gauges) {
  std::lock_guard lock(mutex_);
  engine_ = gauges;
}

EngineGauges ServerMetrics::engine() const {
  std::lock_guard lock(mutex_);
  return engine_;
}

Throughput ServerMetrics::throughput() const {
  std::lock_guard lock(mutex_);
  return {prefill_tokens_, decode_tokens_, completion_tokens_, prefill_seconds_, decode_seconds_};
}

std::string ServerMetrics::render() const {
  std::lock_guard lock(mutex_);
  std::string out;
  header(out, "strata_http_responses_total", "counter", "HTTP responses by endpoint and status");
  for (const auto& [key, count] : responses_)
    out += fmt::format("strata_http_responses_total{{endpoint=\"{}\",status=\"{}\"}} {}\n",
                       key.first, key.second, count);
  single(out, "strata_prompt_tokens_total", "counter", "prompt tokens of finished requests",
         prompt_tokens_);
  single(out, "strata_prompt_tokens_reused_total", "counter",
         "prompt tokens whose KV cache a cached conversation already held", reused_prompt_tokens_);
  single(out, "strata_generated_tokens_total", "counter", "tokens generated", completion_tokens_);
  single(out, "strata_cancelled_requests_total", "counter",
         "generations stopped because the client went away", cancelled_);
  single(out, "strata_prefill_tokens_total", "counter", "prompt tokens computed", prefill_tokens_);
  single(out, "strata_prefill_seconds_total", "counter", "time in prefill", prefill_seconds_);
  single(out, "strata_decode_tokens_total", "counter", "tokens decoded", decode_tokens_);
  single(out, "strata_decode_seconds_total", "counter", "time in decode steps", decode_seconds_);
  single(out, "strata_prefill_tokens_per_second", "gauge", "prompt tokens per second of prefill",
         ratio(double(prefill_tokens_), prefill_seconds_));
  single(out, "strata_decode_tokens_per_second", "gauge",
         "tokens per second of decode, all sequences together",
         ratio(double(decode_tokens_), decode_seconds_));
  request_seconds_.render("strata_request_duration_seconds",
                          "time from a request's arrival to its last byte", out);
  first_token_seconds_.render("strata_time_to_first_token_seconds",
                              "time from a request's arrival to its first generated token", out);
  decode_batch_.render("strata_decode_batch_sequences", "sequences per decode step", out);
  single(out, "strata_parallel_sequences", "gauge", "sequences that can decode together",
         engine_.parallel);
  single(out, "strata_active_sequences", "gauge", "sequences generating now",
         engine_.active_sequences);
  single(out, "strata_queue_depth", "gauge", "requests waiting for a sequence",
         engine_.queued_requests);
  single(out, "strata_kv_cache_tokens", "gauge", "tokens held in the KV caches", engine_.kv_tokens);
  single(out, "strata_kv_cache_capacity_tokens", "gauge", "tokens the KV caches can hold",
         engine_.kv_capacity);
  single(out, "strata_arena_resident_experts", "gauge",
         "expert units in the memory the model computes from", engine_.resident_experts);
  single(out, "strata_experts", "gauge", "expert units of the model", engine_.total_experts);
  const ExpertCounters& c = engine_.experts;
  for_each_expert_counter([&](const char* name, auto member) {
    single(out, fmt::format("strata_expert_{}_total", name), "counter",
           fmt::format("the expert store's {} counter", name), c.*member);
  });
  const ExpertCounters& d = decode_experts_;
  single(out, "strata_decode_expert_claims_total", "counter",
         "experts claimed by decode steps (not prompts)",
         d.hits + d.readahead_hits + d.late_readaheads + d.misses);
  single(out, "strata_decode_expert_served_total", "counter",
         "of those, resident or read ahead in time", d.hits + d.readahead_hits);
  single(out, "strata_decode_expert_bytes_read_total", "counter", "expert bytes decode steps read",
         d.bytes_read);
  return out;
}

}  // namespace strata::server
