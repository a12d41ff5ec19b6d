// strata fit-predictor -m MODEL -f TEXT [-f TEXT ...] -o PREDICTOR: fits the next-token expert
// predictor (model/next_expert_predictor.h) on texts fed teacher-forced: for every layer, a
// ridge regression from what the router reads for token t to the experts it picks for t + 1 ..
// t + horizon (model/next_expert_predictor_fit.h). `--predictor PREDICTOR` then lets the arena's
// policy estimate which of each layer's experts the next tokens use.
#include <strata/session.h>

#include <fmt/format.h>

#include <cstdio>

#include "base/interrupt.h"
#include "base/whole_file.h"
#include "model/next_expert_predictor.h"
#include "model/next_expert_predictor_fit.h"
#include "tools/cli_checks.h"
#include "tools/command.h"
#include "tools/output_files.h"
#include "tools/session_flags.h"

namespace strata::tools {
namespace {

struct FitFlags {
  SessionFlags session;
  std::vector<std::string> texts;
  std::string out_path;
  int64_t limit = 1024;
  int64_t horizon = NextExpertPredictor::kDefaultHorizon;
  double ridge = NextExpertPredictorFit::kDefaultRidge;
  bool force = false;
};

// Feeds one text and adds its samples (a token, the tokens after it) to `fit`; returns the
// tokens fed.
Result<int64_t> add_text(Session& session, const std::string& path, int64_t limit,
                         NextExpertPredictorFit& fit) {
  STRATA_ASSIGN_OR_RETURN(const std::string text, read_whole_text(path));
  std::vector<int32_t> tokens = session.engine().tokenize(text);
  if (limit > 0 && int64_t(tokens.size()) > limit) tokens.resize(size_t(limit));
  const int64_t n = int64_t(tokens.size());
  const int64_t horizon = fit.horizon();
  if (n <= horizon)
    return Status::errorf("{}: {} tokens; a horizon of {} needs more", path, n, horizon);
  const int n_layer = session.engine().n_layers(), k = session.engine().n_experts_per_token();
  const int64_t n_embd = session.engine().n_embd();
  std::vector<std::vector<float>> inputs(size_t(n_layer), std::vector<float>(size_t(n * n_embd)));
  std::vector<std::vector<int32_t>> picks(size_t(n_layer), std::vector<int32_t>(size_t(n * k)));
  session.reset();
  session.set_router_input_callback(
      [&](int layer, int64_t position, int64_t, std::span<const float> x) {
        std::copy(x.begin(), x.end(), inputs[size_t(layer)].begin() + position * n_embd);
      });
  session.set_route_callback([&](int layer, int64_t position, std::span<const int32_t> experts) {
    std::copy(experts.begin(), experts.end(), picks[size_t(layer)].begin() + position * k);
  });
  const Status fed = session.feed(tokens);
  session.set_router_input_callback(nullptr);
  session.set_route_callback(nullptr);
  STRATA_RETURN_IF_ERROR(fed);
  std::vector<std::span<const int32_t>> picks_ahead(static_cast<size_t>(horizon));
  for (int layer = 0; layer < n_layer; ++layer) {
    for (int64_t t = 0; t + horizon < n; ++t) {
      for (int64_t s = 1; s <= horizon; ++s)
        picks_ahead[size_t(s - 1)] = {picks[size_t(layer)].data() + (t + s) * k, size_t(k)};
      fit.add(layer, {inputs[size_t(layer)].data() + t * n_embd, size_t(n_embd)}, picks_ahead);
    }
  }
  return n;
}

int fit_predictor(const FitFlags& flags) {
  CommandInputs inputs;
  inputs.add_session(flags.session.options);
  for (const std::string& text : flags.texts) inputs.add_file("the text", text);
  if (const Status status = inputs.check_outputs({flags.out_path}, flags.force); !status.ok())
    return report_failure(status);
  SessionFlags session_flags = flags.session;
  if (const Status status = resolve_session_flags(session_flags); !status.ok())
    return report_failure(status);
  session_flags.options = without_plan_notes(session_flags.options);
  const auto opened = Session::open(session_flags.options);
  if (!opened.ok()) return report_failure(opened.status());
  Session& session = *opened.value();
  NextExpertPredictorFit fit(session.engine().n_layers(), session.engine().n_embd(),
                             session.engine().n_experts(), flags.horizon);
  int64_t total = 0;
  for (const std::string& path : flags.texts) {
    if (interrupted()) return report_failure(interrupted_error());
    const auto added = add_text(session, path, flags.limit, fit);
    if (!added.ok()) return report_failure(added.status());
    total += added.value();
    std::fprintf(stderr, "%s: %lld tokens\n", path.c_str(), static_cast<long long>(added.value()));
  }
  const auto solution = fit.solve(flags.ridge);
  if (!solution.ok()) return report_failure(solution.status().with_prefix(flags.out_path));
  const Status written =
      NextExpertPredictor::write(flags.out_path, session.engine().n_layers(),
                                 session.engine().n_embd(), session.engine().n_experts(),
                                 flags.horizon, solution.value().weights, solution.value().biases,
                                 fmt::format("model {}; {} texts, {} tokens, horizon {}, ridge {}",
                                             flags.session.options.model_path, flags.texts.size(),
                                             total, flags.horizon, flags.ridge));
  if (!written.ok()) return report_failure(written);
  std::fprintf(stderr, "%s: fitted on %lld tokens of %zu texts\n", flags.out_path.c_str(),
               static_cast<long long>(total), flags.texts.size());
  // Fewer samples than inputs leave each map to its regularization alone.
  if (total < 10 * session.engine().n_embd())
    std::fprintf(stderr,
                 "note: %lld tokens is little for maps of %lld inputs; the study fitted "
                 "strata-tiny-moe on 55,220 (bench/experiments/next_expert_predictor)\n",
                 static_cast<long long>(total), static_cast<long long>(session.engine().n_embd()));
  return 0;
}

}  // namespace

void add_fit_predictor_command(CLI::App& app, Action& action) {
  auto* command = app.add_subcommand(
      "fit-predictor", "fit the next-token expert predictor the 'predicted' cache policy uses");
  auto flags = std::make_shared<FitFlags>();
  add_session_flags(command, flags->session);
  command->add_option("-f,--file", flags->texts, "text to fit on (repeat for more)")
      ->required()
      ->check(CLI::ExistingFile);
  command->add_option("--limit", flags->limit, "tokens fed of each text (0: all)")
      ->check(at_least(0));
  command
      ->add_option("--horizon", flags->horizon, "tokens ahead to estimate each layer's experts for")
      ->check(CLI::Range(int64_t(1), NextExpertPredictor::kMaxHorizon));
  command->add_option("--ridge", flags->ridge, "ridge, relative to the inputs' mean square")
      ->check(real_number("above 0", [](double v) { return v > 0; }));
  command->add_option("-o,--out", flags->out_path, "predictor file to write")->required();
  command->add_flag("--force", flags->force, "replace an existing predictor file (never an input)");
  command->callback([&action, flags] { action = [flags] { return fit_predictor(*flags); }; });
}

}  // namespace strata::tools
