#include "eval/run_table.h"

#include <fmt/format.h>

#include <filesystem>
#include <map>

#include "base/json_field.h"
#include "base/svg_chart.h"
#include "eval/report.h"

namespace strata::eval {
namespace {

std::string budget_of(const nlohmann::json& candidate) {
  const std::string flag = budget_flag(candidate);
  return flag.empty() ? "resident" : flag;
}

std::optional<std::string> suite_sha256(const RunRecord& record) {
  const nlohmann::json* suite = json_member(record.json, "suite");
  return suite ? json_field<std::string>(*suite, "sha256") : std::nullopt;
}

Result<TableRow> row_of(const RunRecord& record) {
  const nlohmann::json& json = record.json;
  try {
    const nlohmann::json& candidate = json.at("candidate");
    const nlohmann::json& groups = json.at("groups");
    if (!groups.is_array() || groups.empty())
      return Status::errorf("{}: no groups of windows", record.path);
    const nlohmann::json& all = groups.back();
    if (all.at("name") != "all") return Status::errorf("{}: no pooled group \"all\"", record.path);
    const nlohmann::json& stats = json.at("candidate_stats");
    const nlohmann::json& experts = stats.at("decode_experts");
    TableRow row;
    row.path = record.path;
    row.label = short_label(candidate);
    row.model = std::filesystem::path(candidate.at("model").at("path").get<std::string>())
                    .filename()
                    .string();
    row.budget = budget_of(candidate);
    row.moce_bonus = json_field<double>(candidate, "moce_bonus").value_or(0);
    row.positions = all.at("positions");
    row.kld_mean = all.at("kld_mean");
    row.kld_lo = all.at("kld_mean_ci").at(0);
    row.kld_hi = all.at("kld_mean_ci").at(1);
    row.kld_p99 = all.at("kld_p99");
    row.top1 = all.at("top1_agreement");
    row.top1_lo = all.at("top1_ci").at(0);
    row.top1_hi = all.at("top1_ci").at(1);
    row.ppl_ref = all.at("ppl_ref");
    row.ppl_cand = all.at("ppl_cand");
    row.decode_tokens = stats.at("decode_tokens");
    row.decode_tokens_per_s = stats.at("decode_tokens_per_s");
    const double served =
        experts.at("hits").get<double>() + experts.at("readahead_hits").get<double>();
    const double claims =
        served + experts.at("late_readaheads").get<double>() + experts.at("misses").get<double>();
    // A resident model never claims from an arena: every expert is there.
    row.hit_rate = claims > 0 ? served / claims : 1.0;
    row.mb_per_token = row.decode_tokens > 0 ? experts.at("bytes_read").get<double>() / 1e6 /
                                                   double(row.decode_tokens)
                                             : 0.0;
    return row;
  } catch (const nlohmann::json::exception& e) {
    return Status::errorf("{}: not a complete `strata eval run` record ({})", record.path,
                          e.what());
  }
}

}  // namespace

Result<std::vector<TableRow>> table_rows(const std::vector<RunRecord>& records) {
  std::vector<TableRow> rows;
  for (const RunRecord& record : records) {
    const RunRecord& first = records.front();
    if (!same_reference(first, record))
      return Status::errorf("{} was scored against another reference than {}", record.path,
                            first.path);
    if (suite_sha256(record) != suite_sha256(first))
      return Status::errorf("{} was scored on another suite than {}", record.path, first.path);
    STRATA_ASSIGN_OR_RETURN(TableRow row, row_of(record));
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string table_markdown(const std::vector<TableRow>& rows) {
  std::string md =
      "| candidate | budget | --moce | mean KLD (95 % CI) | p99 KLD | top-1 agree (95 % CI) | "
      "PPL ref | PPL cand | decode hits + timely read-aheads | MB read / token | decode tok/s |\n"
      "|---|---|---:|---|---:|---|---:|---:|---:|---:|---:|\n";
  for (const TableRow& r : rows) {
    // A record scored in batches has no decode steps to report.
    const std::string decode = r.decode_tokens == 0
                                   ? "– | – | –"
                                   : fmt::format("{:.1f} % | {:.3f} | {:.0f}", 100 * r.hit_rate,
                                                 r.mb_per_token, r.decode_tokens_per_s);
    md += fmt::format(
        "| {} | {} | {:g} | {:.3g} ({:.3g}–{:.3g}) | {:.3g} | {:.2f} % ({:.2f}–{:.2f}) | {:.3f} | "
        "{:.3f} | {} |\n",
        r.model, r.budget, r.moce_bonus, r.kld_mean, r.kld_lo, r.kld_hi, r.kld_p99, 100 * r.top1,
        100 * r.top1_lo, 100 * r.top1_hi, r.ppl_ref, r.ppl_cand, decode);
  }
  return md;
}

std::string table_json(const std::vector<TableRow>& rows, const RunRecord& first,
                       const std::vector<std::string>& command_line) {
  nlohmann::json list = nlohmann::json::array();
  for (const TableRow& r : rows)
    list.push_back({{"record", r.path},
                    {"label", r.label},
                    {"model", r.model},
                    {"budget", r.budget},
                    {"moce_bonus", r.moce_bonus},
                    {"positions", r.positions},
                    {"kld_mean", r.kld_mean},
                    {"kld_mean_ci", {r.kld_lo, r.kld_hi}},
                    {"kld_p99", r.kld_p99},
                    {"top1_agreement", r.top1},
                    {"top1_ci", {r.top1_lo, r.top1_hi}},
                    {"ppl_ref", r.ppl_ref},
                    {"ppl_cand", r.ppl_cand},
                    {"decode_tokens", r.decode_tokens},
                    {"decode_tokens_per_s", r.decode_tokens_per_s},
                    {"decode_hit_rate", r.hit_rate},
                    {"mb_read_per_token", r.mb_per_token}});
  const nlohmann::json json = {{"tool", "strata eval table"},
                               {"version", 1},
                               {"command_line", command_line},
                               {"suite", first.json.value("suite", nlohmann::json())},
                               {"reference", first.json.value("reference", nlohmann::json())},
                               {"rows", list}};
  return json.dump(1) + "\n";
}

std::string price_curve_svg(const std::vector<TableRow>& rows) {
  LineChart chart;
  chart.title = "The price of cache-aware routing: KLD against the decode hit rate";
  chart.x_label = "expert hit rate in decode steps";
  chart.y_label = "mean KLD(exact ‖ candidate), nats";
  chart.x_suffix = "%";
  chart.y_min = 0;
  std::map<std::string, size_t> series_of;
  for (const TableRow& r : rows) {
    if (!series_of.count(r.budget)) {
      series_of[r.budget] = chart.series.size();
      chart.series.push_back({r.budget, {}, {}});
    }
    ChartSeries& series = chart.series[series_of[r.budget]];
    series.x.push_back(100 * r.hit_rate);
    series.y.push_back(r.kld_mean);
  }
  return render_line_chart_svg(chart);
}

std::string kld_bars_svg(const std::vector<TableRow>& rows) {
  BarChart chart;
  chart.title = "Mean KLD(reference ‖ candidate) with 95 % bootstrap interval";
  chart.x_label = "candidate";
  chart.y_label = "mean KLD (nats)";
  BarSeries& series = chart.series.emplace_back();
  series.name = "all domains";
  for (const TableRow& r : rows) {
    chart.categories.push_back(r.budget == "resident" ? r.model : r.model + ", " + r.budget);
    series.values.push_back(r.kld_mean);
    series.lo.push_back(r.kld_lo);
    series.hi.push_back(r.kld_hi);
  }
  return render_bar_chart_svg(chart);
}

}  // namespace strata::eval
