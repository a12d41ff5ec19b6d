// strata cachesim --trace TRACE [--trace ...] --sizes 5%,10%,25% --policies lru,successor:
// replays expert traces (`strata trace`) through an expert cache of each size under each
// replacement policy (experts/lab/cache_simulator.h) and reports the hit rates, each also as a
// fraction of the hits of Belady's MIN (the optimum, which needs the future; always replayed).
// Markdown to stdout (or -o), and optionally JSON (--json) and an SVG plot of hit rate
// against arena size (--plot).
//
// Every trace is replayed from an empty cache; rates over several traces pool their accesses.
#include <fmt/format.h>

#include <cstdio>

#include <nlohmann/json.hpp>

#include "base/atomic_file.h"
#include "base/interrupt.h"
#include "base/svg_chart.h"
#include "experts/lab/cache_simulator.h"
#include "experts/replacement_policy.h"
#include "tools/cli_checks.h"
#include "tools/command.h"
#include "tools/output_files.h"

namespace strata::tools {
namespace {

struct CachesimFlags {
  std::vector<std::string> traces;
  std::string sizes = "5%,10%,25%,50%,75%";
  // Every policy the arena can run, the default among them, so a plain run compares them all.
  std::string policies = fmt::format("{}", fmt::join(replayable_policies(), ","));
  bool scan_prompt = false;
  uint64_t prefill_chunk = 0;
  uint32_t readahead = 0;
  std::string out_path, json_path, plot_path;
  bool force = false;
};

enum class Phase { kAll, kPrompt, kGenerated };

CacheCounts counts(const CacheRun& run, Phase phase) {
  if (phase == Phase::kPrompt) return run.prompt;
  if (phase == Phase::kGenerated) return run.generated;
  return run.total();
}

struct Study {
  std::vector<std::string> paths;
  std::vector<ExpertTrace> traces;
  std::vector<ArenaSize> sizes;
  std::vector<std::string> policies;                     // MIN last
  std::vector<std::vector<std::vector<CacheRun>>> runs;  // [size][policy][trace]

  size_t min_index() const { return policies.size() - 1; }
  uint64_t n_units() const { return traces.front().n_units(); }
  bool has_both_phases(size_t t) const {
    return traces[t].n_prompt_tokens > 0 && traces[t].n_prompt_tokens < traces[t].n_tokens();
  }
  bool any_has_both_phases() const {
    for (size_t t = 0; t < traces.size(); ++t)
      if (has_both_phases(t)) return true;
    return false;
  }
  // Pooled over all traces, or (for the per-phase views) over those with both phases.
  CacheCounts pooled(size_t size, size_t policy, Phase phase) const {
    CacheCounts sum;
    for (size_t t = 0; t < traces.size(); ++t)
      if (phase == Phase::kAll || has_both_phases(t)) sum += counts(runs[size][policy][t], phase);
    return sum;
  }
};

Result<std::vector<std::string>> parse_policies(std::string_view list) {
  std::vector<std::string> policies;
  while (!list.empty()) {
    const size_t comma = list.find(',');
    const std::string name(list.substr(0, comma));
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    if (name == kMinPolicy) continue;  // always replayed, as the last column
    STRATA_RETURN_IF_ERROR(
        make_policy(name, PolicyShape{1, 1, 1}).status().with_prefix("--policies"));
    policies.push_back(name);
  }
  if (policies.empty()) return Status::error("--policies: name at least one practical policy");
  policies.emplace_back(kMinPolicy);
  return policies;
}

Status load_traces(const CachesimFlags& flags, Study& study) {
  for (const std::string& path : flags.traces) {
    STRATA_ASSIGN_OR_RETURN(ExpertTrace trace, read_expert_trace(path));
    if (!study.traces.empty()) {
      const ExpertTrace& first = study.traces.front();
      if (trace.n_layer != first.n_layer || trace.n_expert != first.n_expert ||
          trace.n_expert_used != first.n_expert_used)
        return Status::errorf("{}: {} layers x {} experts, top-{}, but {} has {} x {}, top-{}",
                              path, trace.n_layer, trace.n_expert, trace.n_expert_used,
                              study.paths.front(), first.n_layer, first.n_expert,
                              first.n_expert_used);
    }
    study.paths.push_back(path);
    study.traces.push_back(std::move(trace));
  }
  return Status();
}

Result<Study> run_study(const CachesimFlags& flags) {
  Study study;
  STRATA_RETURN_IF_ERROR(load_traces(flags, study));
  STRATA_ASSIGN_OR_RETURN(study.sizes, parse_arena_sizes(flags.sizes, study.n_units(),
                                                         study.traces.front().n_expert_used));
  STRATA_ASSIGN_OR_RETURN(study.policies, parse_policies(flags.policies));
  for (const ArenaSize& size : study.sizes) {
    auto& by_policy = study.runs.emplace_back();
    for (const std::string& policy : study.policies) {
      auto& by_trace = by_policy.emplace_back();
      for (const ExpertTrace& trace : study.traces) {
        if (interrupted()) return interrupted_error();
        STRATA_ASSIGN_OR_RETURN(CacheRun run, replay(trace, policy,
                                                     {size.capacity, flags.scan_prompt,
                                                      flags.prefill_chunk, flags.readahead}));
        by_trace.push_back(run);
      }
    }
  }
  return study;
}

double fraction_of(uint64_t hits, uint64_t best) { return best ? double(hits) / double(best) : 1; }

// A row per size, a column per policy; cells "hit rate (fraction of MIN's hits)", or with
// `served` "hits + read-ahead hits per access (fraction of MIN's hits)".
std::string phase_table(const Study& s, Phase phase, bool served = false) {
  std::string md = "| arena | units |";
  for (const std::string& policy : s.policies) md += fmt::format(" {} |", policy);
  md += "\n|---:|---:|";
  for (size_t p = 0; p < s.policies.size(); ++p) md += "---:|";
  md += "\n";
  for (size_t z = 0; z < s.sizes.size(); ++z) {
    const uint64_t best = s.pooled(z, s.min_index(), phase).hits;
    md += fmt::format("| {} | {} |", s.sizes[z].label, s.sizes[z].capacity);
    for (size_t p = 0; p < s.policies.size(); ++p) {
      const CacheCounts c = s.pooled(z, p, phase);
      const uint64_t hits = served ? c.hits + c.readahead_hits : c.hits;
      const double rate = served ? c.served_rate() : c.hit_rate();
      md += p == s.min_index()
                ? fmt::format(" {:.1f}% |", 100 * rate)
                : fmt::format(" {:.1f}% ({:.2f}) |", 100 * rate, fraction_of(hits, best));
    }
    md += "\n";
  }
  return md;
}

// A row per trace and size: the hit rates, all tokens.
std::string per_trace_table(const Study& s) {
  std::string md = "| trace | arena |";
  for (const std::string& policy : s.policies) md += fmt::format(" {} |", policy);
  md += "\n|---|---:|";
  for (size_t p = 0; p < s.policies.size(); ++p) md += "---:|";
  md += "\n";
  for (size_t t = 0; t < s.traces.size(); ++t) {
    for (size_t z = 0; z < s.sizes.size(); ++z) {
      md += fmt::format("| {} | {} |", s.paths[t], s.sizes[z].label);
      for (size_t p = 0; p < s.policies.size(); ++p)
        md += fmt::format(" {:.1f}% |", 100 * s.runs[z][p][t].total().hit_rate());
      md += "\n";
    }
  }
  return md;
}

std::string replay_description(const CachesimFlags& flags, uint32_t k) {
  return fmt::format(
      "Each trace is replayed from an empty cache, token by token and layer by layer; a "
      "layer's {} experts are one group, pinned while it loads them. Prompt tokens: {}. Prompt "
      "units inserted as scan units: {}. Read-ahead: {}.",
      k,
      flags.prefill_chunk == 0
          ? std::string("one at a time, like generated tokens")
          : fmt::format("in chunks of {} as the arena's prefill, each layer loading the union "
                        "of its chunk's experts once (accesses count units per chunk and layer)",
                        flags.prefill_chunk),
      flags.scan_prompt ? "yes" : "no",
      flags.readahead == 0
          ? std::string("off")
          : fmt::format("the top {} predictions of each token for the next layer are inserted "
                        "after each layer (MIN does not read ahead); a claimed prediction is a "
                        "read-ahead hit, not a hit",
                        flags.readahead));
}

std::string markdown(const Study& s, const CachesimFlags& flags) {
  std::string md =
      "# Expert cache simulation\n\n| trace | tokens | prompt | generated | input |\n"
      "|---|---:|---:|---:|---|\n";
  for (size_t t = 0; t < s.traces.size(); ++t) {
    const ExpertTrace& trace = s.traces[t];
    md += fmt::format("| {} | {} | {} | {} | {} |\n", s.paths[t], trace.n_tokens(),
                      trace.n_prompt_tokens, trace.n_tokens() - trace.n_prompt_tokens,
                      trace.teacher_forced ? "teacher-forced" : "prompt + generation");
  }
  const ExpertTrace& first = s.traces.front();
  md += fmt::format(
      "\n{} layers x {} experts, top-{}: {} units. {}\n\n"
      "## All tokens: hit rate (fraction of MIN's hits)\n\n",
      first.n_layer, first.n_expert, first.n_expert_used, s.n_units(),
      replay_description(flags, first.n_expert_used));
  md += phase_table(s, Phase::kAll);
  if (flags.readahead > 0)
    md += "\n## All tokens: hits + read-ahead hits per access (fraction of MIN's hits)\n\n" +
          phase_table(s, Phase::kAll, true);
  if (s.any_has_both_phases()) {
    md += "\n## Prompt tokens (prefill), traces with a generation\n\n" +
          phase_table(s, Phase::kPrompt);
    md += "\n## Generated tokens (decode)\n\n" + phase_table(s, Phase::kGenerated);
  }
  if (s.traces.size() > 1) md += "\n## Per trace: hit rate, all tokens\n\n" + per_trace_table(s);
  return md;
}

nlohmann::json counts_json(const CacheCounts& c, uint64_t best_hits) {
  return {{"accesses", c.accesses},
          {"hits", c.hits},
          {"hit_rate", c.hit_rate()},
          {"fraction_of_min", fraction_of(c.hits, best_hits)},
          {"readahead_hits", c.readahead_hits},
          {"readaheads_issued", c.readaheads_issued},
          {"readaheads_wasted", c.readaheads_wasted},
          {"served_rate", c.served_rate()},
          {"served_fraction_of_min", fraction_of(c.hits + c.readahead_hits, best_hits)}};
}

std::string json_report(const Study& s, const CachesimFlags& flags) {
  nlohmann::json traces = nlohmann::json::array(), results = nlohmann::json::array();
  for (size_t t = 0; t < s.traces.size(); ++t)
    traces.push_back({{"path", s.paths[t]},
                      {"n_tokens", s.traces[t].n_tokens()},
                      {"n_prompt_tokens", s.traces[t].n_prompt_tokens},
                      {"teacher_forced", s.traces[t].teacher_forced},
                      {"note", s.traces[t].note}});
  for (size_t z = 0; z < s.sizes.size(); ++z) {
    for (size_t p = 0; p < s.policies.size(); ++p) {
      nlohmann::json result = {
          {"size", s.sizes[z].label}, {"capacity", s.sizes[z].capacity}, {"policy", s.policies[p]}};
      result["all"] =
          counts_json(s.pooled(z, p, Phase::kAll), s.pooled(z, s.min_index(), Phase::kAll).hits);
      if (s.any_has_both_phases()) {
        for (const auto& [name, phase] :
             {std::pair{"prompt", Phase::kPrompt}, std::pair{"generated", Phase::kGenerated}})
          result[name] = counts_json(s.pooled(z, p, phase), s.pooled(z, s.min_index(), phase).hits);
      }
      nlohmann::json per_trace = nlohmann::json::array();
      for (size_t t = 0; t < s.traces.size(); ++t)
        per_trace.push_back(
            counts_json(s.runs[z][p][t].total(), s.runs[z][s.min_index()][t].total().hits));
      result["per_trace"] = std::move(per_trace);
      results.push_back(std::move(result));
    }
  }
  const ExpertTrace& first = s.traces.front();
  const nlohmann::json json = {{"n_layer", first.n_layer},
                               {"n_expert", first.n_expert},
                               {"n_expert_used", first.n_expert_used},
                               {"n_units", s.n_units()},
                               {"scan_prompt", flags.scan_prompt},
                               {"prefill_chunk", flags.prefill_chunk},
                               {"readahead", flags.readahead},
                               {"command", command_line()},
                               {"traces", traces},
                               {"results", results}};
  return json.dump(2) + "\n";
}

std::string plot(const Study& s) {
  uint64_t tokens = 0;
  for (const ExpertTrace& trace : s.traces) tokens += trace.n_tokens();
  LineChart chart;
  chart.title = fmt::format("Expert cache hit rate ({} trace{}, {} tokens)", s.traces.size(),
                            s.traces.size() == 1 ? "" : "s", tokens);
  chart.x_label = fmt::format("arena size (% of {} expert units)", s.n_units());
  chart.y_label = "hit rate";
  chart.x_suffix = chart.y_suffix = "%";
  chart.x_min = chart.y_min = 0;
  chart.y_max = 100;
  for (size_t p = 0; p < s.policies.size(); ++p) {
    ChartSeries& series = chart.series.emplace_back();
    series.name = s.policies[p] == kMinPolicy ? "min (Belady, offline)" : s.policies[p];
    for (size_t z = 0; z < s.sizes.size(); ++z) {
      series.x.push_back(100.0 * double(s.sizes[z].capacity) / double(s.n_units()));
      series.y.push_back(100.0 * s.pooled(z, p, Phase::kAll).hit_rate());
    }
  }
  return render_line_chart_svg(chart);
}

int cachesim(const CachesimFlags& flags) {
  CommandInputs inputs;
  for (const std::string& trace : flags.traces) inputs.add_file("the trace", trace);
  const Status writable =
      inputs.check_outputs({flags.out_path, flags.json_path, flags.plot_path}, flags.force);
  if (!writable.ok()) return report_failure(writable);
  const auto study = run_study(flags);
  if (!study.ok()) return report_failure(study.status());
  const std::string md = markdown(study.value(), flags);
  if (flags.out_path.empty()) std::fputs(md.c_str(), stdout);
  for (const auto& [path, text] :
       {std::pair{flags.out_path, flags.out_path.empty() ? "" : md},
        std::pair{flags.json_path,
                  flags.json_path.empty() ? "" : json_report(study.value(), flags)},
        std::pair{flags.plot_path, flags.plot_path.empty() ? "" : plot(study.value())}}) {
    if (path.empty()) continue;
    const Status written = write_file_atomically(path, text);
    if (!written.ok()) return report_failure(written);
  }
  return 0;
}

}  // namespace

void add_cachesim_command(CLI::App& app, Action& action) {
  auto* command = app.add_subcommand(
      "cachesim", "replay expert traces through expert caches: hit rate per size and policy");
  auto flags = std::make_shared<CachesimFlags>();
  command->add_option("--trace", flags->traces, "trace from `strata trace` (repeatable)")
      ->required();
  command
      ->add_option("--sizes", flags->sizes,
                   "arena sizes: percentages of all expert units, or unit counts")
      ->capture_default_str();
  command
      ->add_option("--policies", flags->policies,
                   fmt::format("replacement policies: {} (min is always included)",
                               fmt::join(replayable_policies(), ", ")))
      ->capture_default_str();
  command->add_flag("--scan-prompt", flags->scan_prompt,
                    "insert the units of prompt tokens as scan units");
  command
      ->add_option("--prefill-chunk", flags->prefill_chunk,
                   "replay the prompt as the arena's prefill, in chunks of this many tokens "
                   "(0: token by token)")
      ->check(at_least(0));
  command
      ->add_option("--readahead", flags->readahead,
                   "insert each token's top N predictions for the next layer (traces "
                   "recorded with predictions)")
      ->check(at_least(0));
  command->add_option("-o,--out", flags->out_path, "write the Markdown report here, not to stdout");
  command->add_option("--json", flags->json_path, "write the results as JSON");
  command->add_option("--plot", flags->plot_path, "write an SVG plot of hit rate vs arena size");
  command->add_flag("--force", flags->force,
                    "replace existing -o, --json and --plot files (never an input)");
  command->callback([&action, flags] { action = [flags] { return cachesim(*flags); }; });
}

}  // namespace strata::tools
