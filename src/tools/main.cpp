// strata: the command-line front end. Each sub-command lives in its own file (command.h).
#include <strata/version.h>

#include <cstdio>
#include <new>

#include "base/interrupt.h"
#include "tools/command.h"
#include "tools/help_formatter.h"

namespace strata::tools {

int report_failure(const Status& status) {
  if (interrupted()) {
    std::fputs("strata: interrupted\n", stderr);
    return interrupt_exit_code();
  }
  std::fprintf(stderr, "strata: %s\n", status.message().c_str());
  return 1;
}

static std::vector<std::string> arguments;
const std::vector<std::string>& command_line() { return arguments; }

static std::vector<std::string> lines_after_parsing;
void say_after_parsing(std::string line) { lines_after_parsing.push_back(std::move(line)); }

}  // namespace strata::tools

int main(int argc, char** argv) {
  using namespace strata::tools;
  // First, so that a signal at any moment finds them: the earliest ones stop the command before
  // it starts (below), the later ones at its next poll.
  strata::install_interrupt_handlers();
  arguments.assign(argv, argv + argc);
  CLI::App app{"Strata: Mixture-of-Experts inference with experts streamed from disk", "strata"};
  // Sub-commands copy these when they are added: every option's --help then shows its default.
  app.option_defaults()->always_capture_default();
  app.formatter(std::make_shared<HelpFormatter>());
  app.set_version_flag("--version", [] { return strata::version_line(); });
  app.require_subcommand(1);
  Action action;
  add_run_command(app, action);
  add_chat_command(app, action);
  add_logits_command(app, action);
  add_tokenize_command(app, action);
  add_inspect_command(app, action);
  add_make_model_command(app, action);
  add_bench_command(app, action);
  add_trace_command(app, action);
  add_fit_predictor_command(app, action);
  add_cachesim_command(app, action);
  add_eval_command(app, action);
  add_calibrate_command(app, action);
  add_quantize_command(app, action);
  add_heal_command(app, action);
  add_prune_command(app, action);
  add_repack_command(app, action);
  add_split_command(app, action);
  add_serve_command(app, action);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    // --help prints the usage, --version the version line
    if (error.get_exit_code() == 0) return app.exit(error);
    // Like every other bad input: one line, exit code 1.
    return report_failure(strata::Status::error(error.what()));
  }
  for (const std::string& line : lines_after_parsing) std::fprintf(stderr, "%s\n", line.c_str());
  if (strata::interrupted()) return report_failure(strata::interrupted_error());
  try {
    return action();
  } catch (const std::bad_alloc&) {
    // What the memory plan and the checks before allocating did not foresee.
    return report_failure(strata::Status::error("out of memory"));
  }
}
