#include "lab/benchmark_summary.h"

#include <algorithm>
#include <limits>

#include "base/check.h"
#include "lab/provenance.h"

namespace strata {
namespace {

template <class F>
Summary summarize_runs(const std::vector<BenchmarkRun>& runs, F value) {
  std::vector<double> values;
  for (const BenchmarkRun& r : runs) values.push_back(value(r));
  return summarize(values);
}

// A streaming variant's decode as a share of the same model's all-resident variant (on the same
// device) in this
// bench, repetition by repetition (the variants run interleaved, so each pair ran minutes
// apart at most): what streaming costs against not streaming, where the disk's bound says
// little because compute, not the disk, limits the resident model. Empty without such a
// variant.
std::optional<Summary> decode_share_of_resident(const std::vector<BenchmarkVariant>& variants,
                                                const BenchmarkVariant& v, size_t prompt) {
  if (!streams_experts(v.options)) return std::nullopt;
  for (const BenchmarkVariant& resident : variants) {
    if (streams_experts(resident.options) || resident.options.model_path != v.options.model_path ||
        resident.device != v.device)
      continue;
    std::vector<double> shares;
    const std::vector<BenchmarkRun>& mine = v.runs[prompt];
    const std::vector<BenchmarkRun>& theirs = resident.runs[prompt];
    for (size_t i = 0; i < mine.size() && i < theirs.size(); ++i)
      shares.push_back(mine[i].decode_tokens_per_s / theirs[i].decode_tokens_per_s);
    if (!shares.empty()) return summarize(shares);
  }
  return std::nullopt;
}

// Speed, the expert store's counters and the probes, as measured.
void summarize_measures(const std::vector<BenchmarkRun>& runs, PromptLengthSummary& s) {
  using R = const BenchmarkRun&;
  s.prefill_tokens_per_s = summarize_runs(runs, [](R r) { return r.prefill_tokens_per_s; });
  s.decode_tokens_per_s = summarize_runs(runs, [](R r) { return r.decode_tokens_per_s; });
  s.decode_ms_per_token = summarize_runs(runs, [](R r) { return r.decode_ms_per_token; });
  s.decode_compute_ms_per_token = summarize_runs(
      runs, [](R r) { return r.decode_ms_per_token - r.per_token(r.decode.host_wait_ms); });
  s.decode_device_wait_ms_per_token =
      summarize_runs(runs, [](R r) { return r.per_token(r.decode_device_wait_ms); });
  s.hit_rate = summarize_runs(runs, [](R r) { return r.decode.hit_rate(); });
  s.bytes_read_per_token =
      summarize_runs(runs, [](R r) { return r.per_token(double(r.decode.bytes_read)); });
  s.missed_bytes_per_token =
      summarize_runs(runs, [](R r) { return r.per_token(double(r.decode.missed_bytes)); });
  s.host_wait_ms_per_token =
      summarize_runs(runs, [](R r) { return r.per_token(r.decode.host_wait_ms); });
  s.misses_on_host_per_token =
      summarize_runs(runs, [](R r) { return r.per_token(double(r.decode.misses_on_host)); });
  s.memory_gb_s = summarize_runs(runs, [](R r) { return r.memory_bandwidth / 1e9; });
  s.disk_mb_s = summarize_runs(runs, [](R r) { return r.disk_bandwidth / 1e6; });
  s.disk_mb_s_before = summarize_runs(runs, [](R r) { return r.disk_before / 1e6; });
  s.disk_mb_s_after = summarize_runs(runs, [](R r) { return r.disk_after / 1e6; });
  s.bus_gb_s = summarize_runs(runs, [](R r) { return r.bus_bandwidth / 1e9; });
  s.disk_busy_share = summarize_runs(runs, [](R r) { return r.disk_busy_share(); });
  s.disk_delivered_mb_s = summarize_runs(runs, [](R r) { return r.disk_delivered() / 1e6; });
  s.page_cache_share = summarize_runs(runs, [](R r) { return r.page_cache_share; });
}

// The bounds and the decode's share of them.
void summarize_bounds(const std::vector<BenchmarkRun>& runs, const DecodeBound& b, bool unit_reads,
                      PromptLengthSummary& s) {
  using R = const BenchmarkRun&;
  s.kv_cache_bytes_per_token = summarize_runs(runs, [&](R r) { return b.kv_bytes(r); });
  const Summary missed = summarize_runs(runs, [&](R r) { return b.missed_bound(r); });
  const Summary memory = summarize_runs(runs, [&](R r) { return b.memory_bound(r); });
  if (missed.median < memory.median) s.bound_kind = s.bus_gb_s.median > 0 ? "bus" : "disk";
  s.bound_tokens_per_s = summarize_runs(runs, [&](R r) { return b.bound(r); });
  s.fraction_of_bound =
      summarize_runs(runs, [&](R r) { return r.decode_tokens_per_s / b.bound(r); });
  if (!unit_reads) return;
  s.unit_disk_mb_s = summarize_runs(runs, [](R r) { return r.unit_disk_bandwidth / 1e6; });
  s.unit_bound_tokens_per_s = summarize_runs(runs, [&](R r) { return b.unit_bound(r); });
  s.fraction_of_unit_bound =
      summarize_runs(runs, [&](R r) { return r.decode_tokens_per_s / b.unit_bound(r); });
}

}  // namespace

double DecodeBound::kv_bytes(const BenchmarkRun& r) const {
  return kv_bytes_per_position * (double(prompt_tokens) + double(r.decode_tokens + 1) / 2);
}

double DecodeBound::memory_bound(const BenchmarkRun& r) const {
  return r.memory_bandwidth / (weight_bytes + kv_bytes(r));
}

double DecodeBound::missed_bound_at(const BenchmarkRun& r, double rate) const {
  const double missed_bytes = r.per_token(double(r.decode.missed_bytes));
  return missed_bytes > 0 ? rate / missed_bytes : std::numeric_limits<double>::infinity();
}

double DecodeBound::missed_bound(const BenchmarkRun& r) const {
  return missed_bound_at(r, r.bus_bandwidth > 0 ? r.bus_bandwidth : r.disk_bandwidth);
}

double DecodeBound::bound(const BenchmarkRun& r) const {
  return std::min(memory_bound(r), missed_bound(r));
}

double DecodeBound::unit_bound(const BenchmarkRun& r) const {
  return std::min(memory_bound(r), missed_bound_at(r, r.unit_disk_bandwidth));
}

Result<VariantSummary> summarize_variant(const BenchmarkVariant& v,
                                         const std::vector<BenchmarkVariant>& variants,
                                         const BenchmarkOptions& options) {
  STRATA_CHECK(v.engine.has_value());
  VariantSummary summary;
  summary.model_path = v.options.model_path;
  STRATA_ASSIGN_OR_RETURN(summary.model_sha256, sha256_model(v.options.model_path));
  summary.budget_text = v.budget_text;
  summary.device = v.device;
  summary.cpu_experts = v.cpu_experts;
  summary.backend = v.engine->backend;
  summary.memory_budget_bytes = v.options.memory_budget;
  summary.arena_share = v.options.arena_share;
  summary.decode_weight_bytes_per_token = v.engine->decode_weight_bytes_per_token;
  summary.read_pattern = v.engine->read_pattern;
  DecodeBound bound{.weight_bytes = summary.decode_weight_bytes_per_token,
                    .kv_bytes_per_position = v.engine->kv_bytes_per_position,
                    .prompt_tokens = 0};
  for (size_t p = 0; p < options.prompt_lengths.size(); ++p) {
    PromptLengthSummary& s = summary.prompts.emplace_back();
    s.prompt_tokens = bound.prompt_tokens = options.prompt_lengths[p];
    summarize_measures(v.runs[p], s);
    summarize_bounds(v.runs[p], bound, summary.read_pattern.has_value(), s);
    s.fraction_of_resident = decode_share_of_resident(variants, v, p);
  }
  return summary;
}

}  // namespace strata
