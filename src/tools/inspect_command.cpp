// strata inspect -m MODEL [--mem SIZE]: architecture, tensors, expert sizes, memory needs, and
// with --mem the memory plan a session would make under that budget.
#include <strata/inspect.h>
#include <strata/session.h>

#include <cstdio>

#include "tools/command.h"
#include "tools/session_flags.h"

namespace strata::tools {
namespace {

struct InspectFlags {
  InspectOptions inspect;
  SessionFlags session;
};

int inspect(InspectFlags flags) {
  const auto report = inspect_model(flags.session.options.model_path, flags.inspect);
  if (!report.ok()) return report_failure(report.status());
  if (flags.session.memory_budget.empty()) {
    std::fputs(report.value().c_str(), stdout);
    return 0;
  }
  // The plan is made before anything is printed: a bad flag or file is then the one line
  // reported, not an error in the middle of the listing.
  if (const Status status = resolve_session_flags(flags.session); !status.ok())
    return report_failure(status);
  const auto plan = Engine::plan(flags.session.options);
  if (!plan.ok()) return report_failure(plan.status());
  std::fputs(report.value().c_str(), stdout);
  std::fputs(plan.value().text.c_str(), stdout);
  // A budget that run would refuse fails here too, with run's message, so that a script can
  // ask inspect whether a budget is enough.
  if (!plan.value().shortfall.ok()) return report_failure(plan.value().shortfall);
  return 0;
}

}  // namespace

void add_inspect_command(CLI::App& app, Action& action) {
  auto* command = app.add_subcommand("inspect", "architecture, tensors, expert sizes, memory plan");
  auto flags = std::make_shared<InspectFlags>();
  add_session_flags(command, flags->session);
  command->add_flag("--metadata", flags->inspect.list_metadata, "also list every metadata key");
  command->callback([&action, flags] { action = [flags] { return inspect(*flags); }; });
}

}  // namespace strata::tools
