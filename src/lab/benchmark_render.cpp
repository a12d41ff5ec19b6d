#include "lab/benchmark_render.h"

#include <fmt/format.h>

#include <filesystem>

#include "base/svg_chart.h"

namespace strata {
namespace {

nlohmann::json summary_json(const Summary& s) {
  return {{"median", s.median}, {"min", s.min}, {"max", s.max}, {"n", s.n}};
}

nlohmann::json summary_json(const std::optional<Summary>& s) {
  return s ? summary_json(*s) : nlohmann::json(nullptr);
}

nlohmann::json read_pattern_json(const std::optional<ExpertReadPattern>& pattern) {
  return pattern ? nlohmann::json{{"read_bytes", pattern->read_bytes},
                                  {"in_flight", pattern->in_flight}}
                 : nlohmann::json(nullptr);
}

nlohmann::json result_json(const VariantSummary& v, const PromptLengthSummary& s) {
  return {{"model", {{"path", v.model_path}, {"sha256", v.model_sha256}}},
          {"device", v.device},
          {"cpu_experts",
           v.cpu_experts.empty() ? nlohmann::json(nullptr) : nlohmann::json(v.cpu_experts)},
          {"backend", v.backend},
          {"memory_budget", v.budget_text},
          {"memory_budget_bytes", v.memory_budget_bytes},
          {"arena_share", v.arena_share},
          {"prompt_tokens", s.prompt_tokens},
          {"prefill_tokens_per_s", summary_json(s.prefill_tokens_per_s)},
          {"decode_tokens_per_s", summary_json(s.decode_tokens_per_s)},
          {"decode_ms_per_token", summary_json(s.decode_ms_per_token)},
          {"decode_compute_ms_per_token", summary_json(s.decode_compute_ms_per_token)},
          {"decode_device_wait_ms_per_token", summary_json(s.decode_device_wait_ms_per_token)},
          {"decode_hit_rate", summary_json(s.hit_rate)},
          {"decode_bytes_read_per_token", summary_json(s.bytes_read_per_token)},
          {"decode_missed_bytes_per_token", summary_json(s.missed_bytes_per_token)},
          {"decode_host_wait_ms_per_token", summary_json(s.host_wait_ms_per_token)},
          {"decode_misses_on_host_per_token", summary_json(s.misses_on_host_per_token)},
          {"decode_weight_bytes_per_token", v.decode_weight_bytes_per_token},
          {"decode_kv_cache_bytes_per_token", summary_json(s.kv_cache_bytes_per_token)},
          {"memory_read_gb_s", summary_json(s.memory_gb_s)},
          {"disk_read_mb_s", summary_json(s.disk_mb_s)},
          {"disk_read_mb_s_before_run", summary_json(s.disk_mb_s_before)},
          {"disk_read_mb_s_after_run", summary_json(s.disk_mb_s_after)},
          {"bus_copy_gb_s", summary_json(s.bus_gb_s)},
          {"decode_disk_busy_share", summary_json(s.disk_busy_share)},
          {"decode_disk_delivered_mb_s", summary_json(s.disk_delivered_mb_s)},
          {"page_cache_share_at_start", summary_json(s.page_cache_share)},
          {"bound_tokens_per_s", summary_json(s.bound_tokens_per_s)},
          {"bound_kind", s.bound_kind},
          {"decode_fraction_of_bound", summary_json(s.fraction_of_bound)},
          {"unit_read_pattern", read_pattern_json(v.read_pattern)},
          {"disk_unit_read_mb_s", summary_json(s.unit_disk_mb_s)},
          {"unit_bound_tokens_per_s", summary_json(s.unit_bound_tokens_per_s)},
          {"decode_fraction_of_unit_bound", summary_json(s.fraction_of_unit_bound)},
          {"decode_fraction_of_resident", summary_json(s.fraction_of_resident)}};
}

// "66 % (62-68)": a share's median and range, as the table shows them; "–" where there is none.
std::string share_cell(const std::optional<Summary>& share) {
  if (!share) return "–";
  return fmt::format("{:.0f} % ({:.0f}-{:.0f})", 100 * share->median, 100 * share->min,
                     100 * share->max);
}

// "cuda", or "cuda, cpu-experts auto" where the bench compared --cpu-experts settings.
std::string device_label(const VariantSummary& v) {
  return v.cpu_experts.empty() ? v.device : v.device + ", cpu-experts " + v.cpu_experts;
}

std::string markdown_row(const VariantSummary& v, const PromptLengthSummary& s) {
  return fmt::format(
      "| {} | {} | {} | {} | {:.1f} ({:.1f}-{:.1f}) | {:.2f} ({:.2f}-{:.2f}) | {:.1f} % | {:.1f} | "
      "{:.1f} | {:.1f} | {:.0f} % | {:.2f} {} | {} | {} | {} |\n",
      std::filesystem::path(v.model_path).filename().string(), device_label(v), v.budget_text,
      s.prompt_tokens, s.prefill_tokens_per_s.median, s.prefill_tokens_per_s.min,
      s.prefill_tokens_per_s.max, s.decode_tokens_per_s.median, s.decode_tokens_per_s.min,
      s.decode_tokens_per_s.max, 100 * s.hit_rate.median, s.missed_bytes_per_token.median / 1e6,
      s.bytes_read_per_token.median / 1e6, s.host_wait_ms_per_token.median,
      100 * s.disk_busy_share.median, s.bound_tokens_per_s.median, "(" + s.bound_kind + ")",
      share_cell(s.fraction_of_bound), share_cell(s.fraction_of_unit_bound),
      share_cell(s.fraction_of_resident));
}

void add_bar(BarSeries& series, const Summary& share) {
  series.values.push_back(100 * share.median);
  series.lo.push_back(100 * share.min);
  series.hi.push_back(100 * share.max);
}

}  // namespace

nlohmann::json benchmark_results_json(const std::vector<VariantSummary>& variants) {
  nlohmann::json results = nlohmann::json::array();
  for (const VariantSummary& v : variants)
    for (const PromptLengthSummary& s : v.prompts) results.push_back(result_json(v, s));
  return results;
}

std::string benchmark_markdown(const std::vector<VariantSummary>& variants) {
  std::string markdown =
      "| model | device | mem | prompt | prefill tok/s | decode tok/s | hits | MB missed / token | "
      "MB read / token | wait ms / token | disk busy | bound tok/s | of bound | of unit-read "
      "bound | of resident |\n"
      "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const VariantSummary& v : variants)
    for (const PromptLengthSummary& s : v.prompts) markdown += markdown_row(v, s);
  return markdown;
}

std::string benchmark_chart_svg(const std::vector<VariantSummary>& variants,
                                const BenchmarkOptions& options) {
  const bool one_model = options.model_paths.size() == 1;
  const bool several_devices = options.devices.size() > 1 || options.cpu_experts.size() > 1;
  auto stem = [](const std::string& path) { return std::filesystem::path(path).stem().string(); };
  BarChart chart{
      .title = (one_model ? stem(options.model_paths[0]) + ": decode" : std::string("Decode")) +
               " against its bound (" + std::to_string(options.repetitions) +
               " runs: median, min-max)",
      .x_label = one_model ? "memory / prompt tokens" : "model, memory / prompt tokens",
      .y_label = "share",
      .y_suffix = " %",
      .categories = {},
      .y_min = 0,
      .y_max = std::nullopt,
      .series = {{"decode ÷ bound", {}, {}, {}}, {"disk busy", {}, {}, {}}}};
  for (const VariantSummary& v : variants)
    for (const PromptLengthSummary& s : v.prompts) {
      chart.categories.push_back(fmt::format(
          "{}{}{} / {}", one_model ? "" : stem(v.model_path) + " ",
          several_devices ? device_label(v) + " " : "", v.budget_text, s.prompt_tokens));
      add_bar(chart.series[0], s.fraction_of_bound);
      add_bar(chart.series[1], s.disk_busy_share);
    }
  return render_bar_chart_svg(chart);
}

}  // namespace strata
