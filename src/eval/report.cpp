#include "eval/report.h"

#include <strata/expert_counters_json.h>

#include <fmt/format.h>

#include <ctime>
#include <filesystem>

#include "base/json_field.h"
#include "base/svg_chart.h"
#include "lab/provenance.h"
#include "runtime/byte_size.h"

namespace strata::eval {
namespace {

constexpr const char* kAll = "all";

nlohmann::json summary_json(const ScoreSummary& s) {
  return {{"positions", s.n},
          {"kld_mean", s.kld_mean},
          {"kld_median", s.kld_median},
          {"kld_p90", s.kld_p90},
          {"kld_p99", s.kld_p99},
          {"kld_max", s.kld_max},
          {"top1_agreement", s.top1_agreement},
          {"ppl_ref", s.ppl_ref},
          {"ppl_cand", s.ppl_cand},
          {"rms_delta_p", s.rms_delta_p},
          {"tail_mass_mean", s.tail_mass_mean}};
}

nlohmann::json window_json(const SuiteWindow& w, const WindowScores& scores) {
  nlohmann::json json = {{"id", w.id},       {"domain", w.domain}, {"document", w.document},
                         {"start", w.start}, {"prompt", w.prompt}, {"scored", w.scored}};
  json.update(summary_json(summarize_scores(scores.positions, scores.tail_masses)));
  double kld = 0, ref_nll = 0, cand_nll = 0;
  int64_t top1 = 0;
  for (const PositionScore& p : scores.positions) {
    kld += p.kld;
    top1 += p.top1_agree;
    ref_nll += p.ref_nll;
    cand_nll += p.cand_nll;
  }
  json.update({{"kld_sum", kld},
               {"top1_count", top1},
               {"ref_nll_sum", ref_nll},
               {"cand_nll_sum", cand_nll}});
  return json;
}

nlohmann::json candidate_stats_json(const CandidateStats& c) {
  return {{"description", c.description},
          {"prefill_tokens", c.prefill_tokens},
          {"prefill_ms", c.prefill_ms},
          {"decode_tokens", c.decode_tokens},
          {"decode_ms", c.decode_ms},
          {"decode_tokens_per_s",
           c.decode_ms > 0 ? 1000.0 * double(c.decode_tokens) / c.decode_ms : 0.0},
          {"decode_experts", expert_counters_json(c.decode_experts)}};
}

std::string format_value(double v) { return fmt::format("{:.3g}", v); }

}  // namespace

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return text;
}

std::vector<GroupSummary> summarize_groups(const Suite& suite, const ScoringResult& result,
                                           const BootstrapOptions& bootstrap) {
  std::vector<std::string> names;
  for (const SuiteWindow& w : suite.windows)
    if (std::find(names.begin(), names.end(), w.domain) == names.end()) names.push_back(w.domain);
  names.push_back(kAll);
  std::vector<GroupSummary> groups;
  for (const std::string& name : names) {
    std::vector<PositionScore> positions;
    std::vector<double> tails;
    std::vector<RatioSample> kld, top1;
    for (size_t i = 0; i < suite.windows.size(); ++i) {
      if (name != kAll && suite.windows[i].domain != name) continue;
      const WindowScores& scores = result.windows[i];
      positions.insert(positions.end(), scores.positions.begin(), scores.positions.end());
      tails.insert(tails.end(), scores.tail_masses.begin(), scores.tail_masses.end());
      RatioSample k{0, double(scores.positions.size())}, t{0, double(scores.positions.size())};
      for (const PositionScore& p : scores.positions) {
        k.value_sum += p.kld;
        t.value_sum += p.top1_agree;
      }
      kld.push_back(k);
      top1.push_back(t);
    }
    groups.push_back({name, int64_t(kld.size()), summarize_scores(positions, tails),
                      bootstrap_ratio(kld, bootstrap), bootstrap_ratio(top1, bootstrap)});
  }
  return groups;
}

Result<std::string> run_json(const Suite& suite, const ScoringResult& result,
                             const std::vector<GroupSummary>& groups, const RunInputs& inputs) {
  STRATA_ASSIGN_OR_RETURN(const std::string suite_sha256, sha256_file(inputs.suite_path));
  nlohmann::json group_list = nlohmann::json::array(), windows = nlohmann::json::array();
  for (const GroupSummary& g : groups) {
    nlohmann::json json = {{"name", g.name}, {"windows", g.windows}};
    json.update(summary_json(g.scores));
    json["kld_mean_ci"] = {g.kld_mean.lo, g.kld_mean.hi};
    json["top1_ci"] = {g.top1.lo, g.top1.hi};
    group_list.push_back(std::move(json));
  }
  for (size_t i = 0; i < suite.windows.size(); ++i)
    windows.push_back(window_json(suite.windows[i], result.windows[i]));
  const nlohmann::json record = {{"tool", "strata eval"},
                                 {"version", 1},
                                 {"started", inputs.started},
                                 {"finished", utc_now()},
                                 {"command_line", inputs.command_line},
                                 {"binary", binary_description()},
                                 {"machine", machine_description()},
                                 {"environment", environment_description()},
                                 {"suite",
                                  {{"path", inputs.suite_path},
                                   {"sha256", suite_sha256},
                                   {"windows", suite.windows.size()},
                                   {"eval_dir", suite.eval_dir}}},
                                 {"n_vocab", result.n_vocab},
                                 {"candidate", result.candidate_model},
                                 {"reference", result.reference},
                                 {"candidate_stats", candidate_stats_json(result.candidate)},
                                 {"bootstrap",
                                  {{"resamples", inputs.bootstrap.resamples},
                                   {"seed", inputs.bootstrap.seed},
                                   {"confidence", inputs.bootstrap.confidence}}},
                                 {"groups", group_list},
                                 {"windows", windows}};
  return record.dump(1) + "\n";
}

std::string budget_flag(const nlohmann::json& d) {
  if (const uint64_t budget = json_field<uint64_t>(d, "memory_budget_bytes").value_or(0))
    return "--mem " + format_bytes(budget);
  if (const double share = json_field<double>(d, "arena_share").value_or(0); share > 0)
    return fmt::format("--arena {:g}%", 100 * share);
  return "";
}

std::string short_label(const nlohmann::json& d) {
  const std::optional<std::string> logits_dir = json_field<std::string>(d, "logits_dir");
  const nlohmann::json* model = json_member(d, "model");
  if (logits_dir && !model) return fmt::format("stored logits {}", *logits_dir);
  const std::optional<std::string> model_path =
      model ? json_field<std::string>(*model, "path") : std::nullopt;
  std::string label =
      (model_path ? std::filesystem::path(*model_path).filename().string() : "unknown model") +
      ", " + json_field<std::string>(d, "mode").value_or("");
  if (const std::string budget = budget_flag(d); !budget.empty()) label += ", " + budget;
  if (const double bonus = json_field<double>(d, "moce_bonus").value_or(0); bonus != 0)
    label += fmt::format(", --moce {:g} (protect {})", bonus,
                         json_field<int>(d, "moce_protect").value_or(0));
  if (logits_dir) label += ", stored in " + *logits_dir;
  return label;
}

std::string run_markdown(const Suite& suite, const ScoringResult& result,
                         const std::vector<GroupSummary>& groups, const RunInputs& inputs) {
  const CandidateStats& c = result.candidate;
  const ExpertCounters& e = c.decode_experts;
  std::string md = fmt::format(
      "# strata eval\n\n* candidate: {}\n* reference: {}\n* suite: {} ({} windows)\n"
      "* candidate speed: {} tokens decoded at {:.1f} tok/s; expert hit rate {:.1f} % over "
      "decode steps, {:.2f} MB read per decoded token\n\n",
      short_label(result.candidate_model), short_label(result.reference), inputs.suite_path,
      suite.windows.size(), c.decode_tokens,
      c.decode_ms > 0 ? 1000.0 * double(c.decode_tokens) / c.decode_ms : 0.0, 100 * e.hit_rate(),
      c.decode_tokens ? double(e.bytes_read) / 1e6 / double(c.decode_tokens) : 0.0);
  md +=
      "| domain | windows | positions | mean KLD (95 % CI) | median | p90 | p99 | max | top-1 "
      "agree (95 % CI) | PPL ref | PPL cand | RMS Δp |\n"
      "|---|---:|---:|---|---:|---:|---:|---:|---|---:|---:|---:|\n";
  for (const GroupSummary& g : groups) {
    const ScoreSummary& s = g.scores;
    md += fmt::format(
        "| {} | {} | {} | {} ({}–{}) | {} | {} | {} | {} | {:.2f} % ({:.2f}–{:.2f}) | {:.3f} | "
        "{:.3f} | {:.4f} |\n",
        g.name, g.windows, s.n, format_value(s.kld_mean), format_value(g.kld_mean.lo),
        format_value(g.kld_mean.hi), format_value(s.kld_median), format_value(s.kld_p90),
        format_value(s.kld_p99), format_value(s.kld_max), 100 * s.top1_agreement, 100 * g.top1.lo,
        100 * g.top1.hi, s.ppl_ref, s.ppl_cand, s.rms_delta_p);
  }
  if (groups.back().scores.tail_mass_mean > 0)
    md += fmt::format(
        "\nThe reference is stored as top-K rows: KLD is a lower bound (metrics.h TopKRow); the "
        "reference's mean probability outside its top K is {:.2e}.\n",
        groups.back().scores.tail_mass_mean);
  md += fmt::format(
      "\nKLD(ref‖cand) in nats per scored position; intervals: percentile bootstrap over "
      "windows, {} resamples, seed {}.\n",
      inputs.bootstrap.resamples, inputs.bootstrap.seed);
  return md;
}

std::string run_svg(const ScoringResult& result, const std::vector<GroupSummary>& groups) {
  BarChart chart;
  chart.title = "Mean KLD(reference ‖ candidate) per domain";
  chart.x_label = short_label(result.candidate_model);
  chart.y_label = "mean KLD (nats), 95 % CI";
  BarSeries& series = chart.series.emplace_back();
  series.name = "candidate";
  for (const GroupSummary& g : groups) {
    chart.categories.push_back(g.name);
    series.values.push_back(g.scores.kld_mean);
    series.lo.push_back(g.kld_mean.lo);
    series.hi.push_back(g.kld_mean.hi);
  }
  return render_bar_chart_svg(chart);
}

}  // namespace strata::eval
