// strata inspect -m MODEL: architecture, tensors, expert sizes, memory needs.
#include <strata/inspect.h>

#include <cstdio>

#include "tools/command.h"

namespace strata::tools {

void add_inspect_command(CLI::App& app, Action& action) {
  auto* command = app.add_subcommand("inspect", "architecture, tensors, expert sizes, memory plan");
  auto model = std::make_shared<std::string>();
  auto options = std::make_shared<InspectOptions>();
  command->add_option("-m,--model", *model, "GGUF model file")->required();
  command->add_flag("--metadata", options->list_metadata, "also list every metadata key");
  command->callback([&action, model, options] {
    action = [model, options] {
      const auto report = inspect_model(*model, *options);
      if (!report.ok()) return report_failure(report.status());
      std::fputs(report.value().c_str(), stdout);
      return 0;
    };
  });
}

}  // namespace strata::tools
