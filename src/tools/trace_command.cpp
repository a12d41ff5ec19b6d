// strata trace -m MODEL (-p TEXT | -f FILE | --teacher-forced FILE) [-n N] -o TRACE: records
// which experts the router chooses for every token and layer, and the read-ahead predictor's
// top-k for every layer after the first (experts/lab/expert_trace.h), for replaying through
// replacement policies and read-ahead with `strata cachesim`.
//
// With -p/-f the prompt is fed (prefill) and N tokens are generated; the last generated token
// is fed too, so the trace covers the prompt and all N tokens. With --teacher-forced the whole
// text is fed as one prompt and nothing is generated: the routing an evaluation on held-out
// text sees.
#include <strata/session.h>

#include <fmt/format.h>

#include <cstdio>

#include "base/atomic_file.h"
#include "base/interrupt.h"
#include "base/whole_file.h"
#include "experts/lab/expert_trace.h"
#include "tools/cli_checks.h"
#include "tools/command.h"
#include "tools/output_files.h"
#include "tools/session_flags.h"

namespace strata::tools {
namespace {

struct TraceFlags {
  SessionFlags session;
  GenerateOptions generate;
  std::string prompt, prompt_file, teacher_forced_file, out_path;
  int64_t limit = 0;
  bool force = false;
};

// Feeds the input with the recorder attached; returns the number of prompt tokens and a note.
Result<std::pair<uint64_t, std::string>> feed(Session& session, const TraceFlags& flags,
                                              const std::string& text) {
  std::vector<int32_t> tokens = session.engine().tokenize(text);
  if (flags.limit > 0 && int64_t(tokens.size()) > flags.limit) tokens.resize(size_t(flags.limit));
  if (tokens.empty()) return Status::error("trace: the text has no tokens");
  const std::string& input = flags.teacher_forced_file.empty()
                                 ? (flags.prompt_file.empty() ? "the prompt" : flags.prompt_file)
                                 : flags.teacher_forced_file;
  if (const Status fits = session.check_fits_context(int64_t(tokens.size()), input); !fits.ok())
    return Status::errorf("trace: {}; --limit {} traces its first {} tokens", fits.message(),
                          session.n_ctx(), session.n_ctx());
  if (!flags.teacher_forced_file.empty()) {
    STRATA_RETURN_IF_ERROR(session.feed(tokens));
    return std::pair{uint64_t(tokens.size()),
                     fmt::format("teacher-forced {}", flags.teacher_forced_file)};
  }
  // Ctrl-C or SIGTERM stops the generation between tokens, and the trace is not written.
  STRATA_ASSIGN_OR_RETURN(const std::vector<int32_t> generated,
                          session.generate(tokens, flags.generate, [](int32_t, std::string_view) {
                            return !interrupted();
                          }));
  if (interrupted()) return interrupted_error();
  if (!generated.empty()) STRATA_RETURN_IF_ERROR(session.feed({&generated.back(), 1}));
  const auto& g = flags.generate;
  return std::pair{uint64_t(tokens.size()),
                   fmt::format("prompt {}; {} generated (temp {}, top-k {}, top-p {}, min-p {}, "
                               "seed {})",
                               flags.prompt_file.empty() ? "-p" : flags.prompt_file,
                               generated.size(), g.temperature, g.top_k, g.top_p, g.min_p, g.seed)};
}

int trace(const TraceFlags& flags) {
  CommandInputs inputs;
  inputs.add_session(flags.session.options)
      .add_file("the prompt file", flags.prompt_file)
      .add_file("the text", flags.teacher_forced_file);
  if (const Status status = inputs.check_outputs({flags.out_path}, flags.force); !status.ok())
    return report_failure(status);
  std::string text = flags.prompt;
  for (const std::string* path : {&flags.prompt_file, &flags.teacher_forced_file}) {
    if (path->empty()) continue;
    const auto read = read_whole_text(*path);
    if (!read.ok()) return report_failure(read.status());
    text = read.value();
  }
  SessionFlags session_flags = flags.session;
  if (const Status status = resolve_session_flags(session_flags); !status.ok())
    return report_failure(status);
  const auto opened = Session::open(session_flags.options);
  if (!opened.ok()) return report_failure(opened.status());
  Session& session = *opened.value();
  ExpertTraceRecorder recorder(uint32_t(session.engine().n_layers()),
                               uint32_t(session.engine().n_experts()),
                               uint32_t(session.engine().n_experts_per_token()));
  session.set_route_callback(
      [&recorder](int layer, int64_t position, std::span<const int32_t> experts) {
        recorder.record(layer, position, experts);
      });
  session.set_prediction_callback(
      [&recorder](int layer, int64_t position, std::span<const int32_t> experts) {
        recorder.record_prediction(layer, position, experts);
      });
  const auto fed = feed(session, flags, text);
  if (!fed.ok()) return report_failure(fed.status());
  const auto& [n_prompt, input] = fed.value();
  const auto trace =
      recorder.finish(n_prompt, !flags.teacher_forced_file.empty(),
                      fmt::format("model {}; {}", flags.session.options.model_path, input));
  if (!trace.ok())
    return report_failure(trace.status().with_prefix(flags.session.options.model_path));
  const Status written = write_file_atomically(flags.out_path, encode_expert_trace(trace.value()));
  if (!written.ok()) return report_failure(written);
  const ExpertTrace& t = trace.value();
  std::fprintf(stderr,
               "%s: %llu tokens (%llu prompt, %llu generated), %u layers x %u experts, top-%u\n",
               flags.out_path.c_str(), static_cast<unsigned long long>(t.n_tokens()),
               static_cast<unsigned long long>(t.n_prompt_tokens),
               static_cast<unsigned long long>(t.n_tokens() - t.n_prompt_tokens), t.n_layer,
               t.n_expert, t.n_expert_used);
  return 0;
}

}  // namespace

void add_trace_command(CLI::App& app, Action& action) {
  auto* command =
      app.add_subcommand("trace", "record the experts chosen for every token and layer");
  auto flags = std::make_shared<TraceFlags>();
  add_session_flags(command, flags->session);
  add_sampling_flags(command, flags->generate);
  auto* prompt = command->add_option("-p,--prompt", flags->prompt, "prompt text");
  auto* file = command->add_option("-f,--file", flags->prompt_file,
                                   "read the prompt from a file (-: standard input)");
  auto* forced = command->add_option("--teacher-forced", flags->teacher_forced_file,
                                     "feed this text file as one prompt, generate nothing");
  prompt->excludes(file)->excludes(forced);
  file->excludes(forced);
  command->add_option("--limit", flags->limit, "feed at most this many tokens of the text")
      ->check(at_least(0));
  command->add_option("-o,--out", flags->out_path, "trace file to write")->required();
  command->add_flag("--force", flags->force, "replace an existing trace file (never an input)");
  command->callback([&action, flags, prompt, file, forced] {
    action = [flags, prompt, file, forced] {
      if (prompt->count() + file->count() + forced->count() == 0)
        return report_failure(Status::error(
            "trace: give a prompt with -p TEXT or -f FILE, or a text with --teacher-forced FILE"));
      return trace(*flags);
    };
  });
}

}  // namespace strata::tools
