#include "eval/comparison.h"

#include <fmt/format.h>

#include <cmath>

#include "base/json_field.h"
#include "base/svg_chart.h"
#include "eval/report.h"
#include "lab/provenance.h"

namespace strata::eval {
namespace {

constexpr const char* kAll = "all";

std::string label(const RunRecord& r) { return short_label(*json_member(r.json, "candidate")); }

}  // namespace

bool same_reference(const RunRecord& a, const RunRecord& b) {
  // Where a reference's rows were read from does not change them: a model's rows and the same
  // rows stored by --save-ref are one reference.
  auto rows_source = [](const RunRecord& r) {
    nlohmann::json reference = r.json.value("reference", nlohmann::json());
    if (reference.is_object()) reference.erase("logits_dir");
    return reference;
  };
  return rows_source(a) == rows_source(b);
}

Result<std::vector<ComparisonGroup>> compare_runs(const RunRecord& a, const RunRecord& b,
                                                  const BootstrapOptions& bootstrap) {
  if (a.windows.size() != b.windows.size())
    return Status::errorf("{} has {} windows, {} has {}: not the same suite", a.path,
                          a.windows.size(), b.path, b.windows.size());
  std::vector<std::string> names;
  for (size_t i = 0; i < a.windows.size(); ++i) {
    const RunWindow &x = a.windows[i], &y = b.windows[i];
    if (x.id != y.id || x.domain != y.domain || x.positions != y.positions)
      return Status::errorf(
          "window {} of {} is {} ({} positions), of {} {} ({}): not the same suite", i, a.path,
          x.id, x.positions, b.path, y.id, y.positions);
    if (std::find(names.begin(), names.end(), x.domain) == names.end()) names.push_back(x.domain);
  }
  names.push_back(kAll);
  std::vector<ComparisonGroup> groups;
  for (const std::string& name : names) {
    ComparisonGroup g;
    g.name = name;
    std::vector<RatioSample> kld, top1;
    double nll_a = 0, nll_b = 0;
    for (size_t i = 0; i < a.windows.size(); ++i) {
      const RunWindow &x = a.windows[i], &y = b.windows[i];
      if (name != kAll && x.domain != name) continue;
      ++g.windows;
      g.positions += x.positions;
      g.kld_a += x.kld_sum;
      g.kld_b += y.kld_sum;
      g.top1_a += double(x.top1_count);
      g.top1_b += double(y.top1_count);
      nll_a += x.cand_nll_sum;
      nll_b += y.cand_nll_sum;
      kld.push_back({x.kld_sum - y.kld_sum, double(x.positions)});
      top1.push_back({double(x.top1_count - y.top1_count), double(x.positions)});
    }
    const double n = double(g.positions);
    g.kld_a /= n;
    g.kld_b /= n;
    g.top1_a /= n;
    g.top1_b /= n;
    g.ppl_a = std::exp(nll_a / n);
    g.ppl_b = std::exp(nll_b / n);
    g.kld_diff = bootstrap_ratio(kld, bootstrap);
    g.top1_diff = bootstrap_ratio(top1, bootstrap);
    groups.push_back(g);
  }
  return groups;
}

std::string comparison_json(const RunRecord& a, const RunRecord& b,
                            const std::vector<ComparisonGroup>& groups,
                            const BootstrapOptions& bootstrap,
                            const std::vector<std::string>& command_line) {
  nlohmann::json list = nlohmann::json::array();
  for (const ComparisonGroup& g : groups)
    list.push_back({{"name", g.name},
                    {"windows", g.windows},
                    {"positions", g.positions},
                    {"kld_mean_a", g.kld_a},
                    {"kld_mean_b", g.kld_b},
                    {"kld_mean_diff", g.kld_diff.estimate},
                    {"kld_mean_diff_ci", {g.kld_diff.lo, g.kld_diff.hi}},
                    {"top1_a", g.top1_a},
                    {"top1_b", g.top1_b},
                    {"top1_diff", g.top1_diff.estimate},
                    {"top1_diff_ci", {g.top1_diff.lo, g.top1_diff.hi}},
                    {"ppl_cand_a", g.ppl_a},
                    {"ppl_cand_b", g.ppl_b}});
  const auto side = [](const RunRecord& r) {
    return nlohmann::json{{"path", r.path},
                          {"candidate", r.json["candidate"]},
                          {"reference", r.json.value("reference", nlohmann::json())}};
  };
  const nlohmann::json record = {{"tool", "strata eval compare"},
                                 {"version", 1},
                                 {"command_line", command_line},
                                 {"binary", binary_description()},
                                 {"a", side(a)},
                                 {"b", side(b)},
                                 {"same_reference", same_reference(a, b)},
                                 {"bootstrap",
                                  {{"resamples", bootstrap.resamples},
                                   {"seed", bootstrap.seed},
                                   {"confidence", bootstrap.confidence}}},
                                 {"groups", list}};
  return record.dump(1) + "\n";
}

std::string comparison_markdown(const RunRecord& a, const RunRecord& b,
                                const std::vector<ComparisonGroup>& groups,
                                const BootstrapOptions& bootstrap) {
  std::string md = fmt::format(
      "# strata eval compare\n\n* A: {} ({})\n* B: {} ({})\n* reference: {}\n\n", label(a), a.path,
      label(b), b.path,
      same_reference(a, b) ? short_label(a.json.value("reference", nlohmann::json()))
                           : "**the two records were scored against different references**");
  md +=
      "| domain | windows | positions | mean KLD A | mean KLD B | A − B (95 % CI) | top-1 A | "
      "top-1 B | A − B (95 % CI) | PPL A | PPL B |\n"
      "|---|---:|---:|---:|---:|---|---:|---:|---|---:|---:|\n";
  for (const ComparisonGroup& g : groups)
    md += fmt::format(
        "| {} | {} | {} | {:.3g} | {:.3g} | {:+.3g} ({:+.3g} to {:+.3g}) | {:.2f} % | {:.2f} % | "
        "{:+.2f} pp ({:+.2f} to {:+.2f}) | {:.3f} | {:.3f} |\n",
        g.name, g.windows, g.positions, g.kld_a, g.kld_b, g.kld_diff.estimate, g.kld_diff.lo,
        g.kld_diff.hi, 100 * g.top1_a, 100 * g.top1_b, 100 * g.top1_diff.estimate,
        100 * g.top1_diff.lo, 100 * g.top1_diff.hi, g.ppl_a, g.ppl_b);
  md += fmt::format(
      "\nIntervals: paired percentile bootstrap over windows, {} resamples, seed {}; an interval "
      "that excludes 0 is a difference the windows support.\n",
      bootstrap.resamples, bootstrap.seed);
  return md;
}

std::string comparison_svg(const RunRecord& a, const RunRecord& b,
                           const std::vector<ComparisonGroup>& groups) {
  BarChart chart;
  chart.title = "Mean KLD per domain, A − B (paired 95 % CI)";
  chart.x_label = fmt::format("A: {} · B: {}", label(a), label(b));
  chart.y_label = "Δ mean KLD (nats)";
  BarSeries& series = chart.series.emplace_back();
  series.name = "A − B";
  for (const ComparisonGroup& g : groups) {
    chart.categories.push_back(g.name);
    series.values.push_back(g.kld_diff.estimate);
    series.lo.push_back(g.kld_diff.lo);
    series.hi.push_back(g.kld_diff.hi);
  }
  return render_bar_chart_svg(chart);
}

}  // namespace strata::eval
