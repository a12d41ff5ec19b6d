// strata run -m MODEL -p TEXT: generate a continuation of a prompt, streaming it to stdout;
// timings go to stderr (and, with --stats FILE, to a JSON file).
#include <strata/expert_counters_json.h>
#include <strata/session.h>

#include <fmt/format.h>

#include <cstdio>

#include <nlohmann/json.hpp>

#include "base/atomic_file.h"
#include "base/whole_file.h"
#include "tools/command.h"
#include "tools/output_files.h"
#include "tools/session_flags.h"

namespace strata::tools {
namespace {

struct RunFlags {
  SessionFlags session;
  GenerateOptions generate;
  std::string prompt;
  std::string prompt_file;
  std::string stats_path;
  bool force = false;
};

Status write_stats(const std::string& path, const Session& session, int64_t prompt_tokens) {
  const SessionStats& stats = session.stats();
  nlohmann::json steps = nlohmann::json::array();
  for (const auto& step : stats.steps)
    steps.push_back({{"phase", step.prefill ? "prefill" : "decode"},
                     {"tokens", step.tokens},
                     {"ms", step.ms},
                     {"compute_ms", step.ms - step.experts.host_wait_ms},
                     {"experts", expert_counters_json(step.experts)}});
  const nlohmann::json json = {
      {"model", session.describe()},
      {"prompt_tokens", prompt_tokens},
      {"prefill_tokens", stats.prefill_tokens},
      {"prefill_ms", stats.prefill_ms},
      {"prefill_tokens_per_s", stats.prefill_tokens_per_s()},
      {"decode_tokens", stats.decode_tokens},
      {"decode_ms", stats.decode_ms},
      {"decode_compute_ms", stats.decode_ms - stats.decode_experts().host_wait_ms},
      {"decode_tokens_per_s", stats.decode_tokens_per_s()},
      {"experts", expert_counters_json(stats.experts)},
      {"peak_rss_bytes", Session::peak_rss_bytes()},
      {"steps", steps},
  };
  const std::string text = json.dump(2) + "\n";
  return write_file_atomically(path, text);
}

// One line that says what each figure is, in MiB and ms. The share served from the arena counts
// the claims that did not wait for a read: hits and timely read-ahead hits, not late ones.
std::string expert_summary(const SessionStats& stats) {
  const ExpertCounters& e = stats.experts;
  const double run_ms = stats.prefill_ms + stats.decode_ms;
  constexpr double kMiB = 1048576;
  return fmt::format(
      "experts: {:.1f} % served from the arena ({} hits: resident when their layer began; {} "
      "read-ahead hits: prefetched in time; {} late: prefetched but still loading; {} misses: "
      "read on demand) | {:.1f} MiB read, waiting {:.1f} ms, computing {:.1f} ms, disk busy "
      "{:.0f} % | peak RSS {:.1f} MiB",
      100 * e.hit_rate(), e.hits, e.readahead_hits, e.late_readaheads, e.misses,
      double(e.bytes_read) / kMiB, e.host_wait_ms, run_ms - e.host_wait_ms,
      run_ms > 0 ? 100 * e.disk_active_ms / run_ms : 0.0, double(Session::peak_rss_bytes()) / kMiB);
}

int run(RunFlags flags) {
  CommandInputs inputs;
  inputs.add_session(flags.session.options).add_file("the prompt file", flags.prompt_file);
  if (const Status status = inputs.check_outputs({flags.stats_path}, flags.force); !status.ok())
    return report_failure(status);
  if (!flags.prompt_file.empty()) {
    auto text = read_whole_text(flags.prompt_file);
    if (!text.ok()) return report_failure(text.status());
    flags.prompt = std::move(text).value();
  }
  if (const Status status = resolve_session_flags(flags.session); !status.ok())
    return report_failure(status);
  const auto opened = Session::open(flags.session.options);
  if (!opened.ok()) return report_failure(opened.status());
  Session& session = *opened.value();
  const std::vector<int32_t> prompt = session.tokenize(flags.prompt);
  if (prompt.empty()) return report_failure(Status::error("the prompt is empty"));
  // Refused before the prompt is echoed: stdout then holds nothing of a run that did not happen.
  if (const Status fits = session.check_fits_context(int64_t(prompt.size()), "the prompt");
      !fits.ok())
    return report_failure(fits);
  std::fputs(flags.prompt.c_str(), stdout);
  std::fflush(stdout);
  const auto generated =
      session.generate(prompt, flags.generate, [](int32_t, std::string_view text) {
        std::fwrite(text.data(), 1, text.size(), stdout);
        std::fflush(stdout);
      });
  std::fputc('\n', stdout);
  std::fflush(stdout);
  if (!generated.ok()) return report_failure(generated.status());
  if (int64_t(generated.value().size()) < flags.generate.max_tokens &&
      session.n_past() >= session.n_ctx())
    std::fprintf(stderr, "note: stopped at the end of the context (%lld tokens; --ctx)\n",
                 static_cast<long long>(session.n_ctx()));
  const SessionStats& stats = session.stats();
  // A one-token prompt runs as a decode step, and the last generated token is not fed: the
  // rates are per forward pass of each shape, the counts what the user gave and got.
  std::string summary = fmt::format("prompt {} tokens", prompt.size());
  if (stats.prefill_tokens > 0)
    summary += fmt::format(", {:.1f} tok/s", stats.prefill_tokens_per_s());
  summary += fmt::format(" | generated {} tokens", generated.value().size());
  if (stats.decode_tokens > 0)
    summary += fmt::format(", decode {:.2f} tok/s over {} steps", stats.decode_tokens_per_s(),
                           stats.decode_tokens);
  std::fprintf(stderr, "%s\n", summary.c_str());
  if (streams_experts(flags.session.options))
    std::fprintf(stderr, "%s\n", expert_summary(stats).c_str());
  if (!flags.stats_path.empty()) {
    const Status written = write_stats(flags.stats_path, session, int64_t(prompt.size()));
    if (!written.ok()) return report_failure(written);
  }
  if (!flags.session.options.warm_path.empty()) {
    const Status saved = session.save_expert_usage();
    if (!saved.ok()) return report_failure(saved);
  }
  return 0;
}

}  // namespace

void add_run_command(CLI::App& app, Action& action) {
  auto* command = app.add_subcommand("run", "generate a continuation of a prompt");
  auto flags = std::make_shared<RunFlags>();
  add_session_flags(command, flags->session);
  add_sampling_flags(command, flags->generate);
  auto* prompt = command->add_option("-p,--prompt", flags->prompt, "prompt text");
  auto* file = command->add_option("-f,--file", flags->prompt_file,
                                   "read the prompt from a file (-: standard input)");
  prompt->excludes(file);
  command->add_option("--stats", flags->stats_path, "write timings as JSON to this file");
  command->add_flag("--force", flags->force, "replace an existing --stats file (never an input)");
  command->callback([&action, flags, prompt, file] {
    action = [flags, prompt, file] {
      if (prompt->count() == 0 && file->count() == 0)
        return report_failure(Status::error("run: give a prompt with -p TEXT or -f FILE"));
      return run(*flags);
    };
  });
}

}  // namespace strata::tools
