// strata make-model --arch A --preset P --type T --seed S -o FILE: a synthetic model with
// random weights and realistic routing, then a table of how it routes.
#include <strata/synthetic_model.h>

#include <cstdio>

#include "tools/cli_checks.h"
#include "tools/command.h"
#include "tools/output_files.h"
#include "tools/seed_option.h"

namespace strata::tools {
namespace {

struct MakeModelFlags {
  SyntheticModelOptions options;
  int64_t stats_tokens = 256;
  bool list = false;
  bool force = false;
};

int make_model(const MakeModelFlags& flags) {
  if (flags.list) {
    for (const auto& line : synthetic_presets()) std::printf("%s\n", line.c_str());
    return 0;
  }
  if (flags.options.output_path.empty())
    return report_failure(Status::error("make-model: give the output file with -o FILE"));
  const Status writable = CommandInputs()
                              .add_model(flags.options.vocab_path, "the vocabulary")
                              .check_outputs({flags.options.output_path}, flags.force);
  if (!writable.ok()) return report_failure(writable);
  const Status made = make_synthetic_model(flags.options);
  if (!made.ok()) return report_failure(made);
  std::fprintf(stderr, "wrote %s\n", flags.options.output_path.c_str());
  if (flags.stats_tokens <= 0) return 0;
  const auto report = measure_routing(flags.options.output_path, flags.stats_tokens,
                                      flags.options.seed, flags.options.n_threads);
  if (!report.ok()) return report_failure(report.status());
  std::fputs(report.value().to_text().c_str(), stdout);
  return 0;
}

}  // namespace

void add_make_model_command(CLI::App& app, Action& action) {
  auto* command =
      app.add_subcommand("make-model", "write a synthetic model for tests and benchmarks");
  auto flags = std::make_shared<MakeModelFlags>();
  SyntheticModelOptions& o = flags->options;
  command->add_option("--arch", o.arch, "qwen3moe or qwen2moe");
  command->add_option("--preset", o.preset, "shape preset (see --list)");
  command->add_option("--type", o.type, "format of the 2-D weights: q4_0, q4_k, q8_0, f16, ...");
  command->add_option("--expert-type", o.expert_type, "format of the routed experts (e.g. q2_0)")
      ->default_str("--type");
  add_seed_option(command, "--seed", o.seed, "seed", "weights are a function of the seed");
  command->add_option("-o,--output", o.output_path, "output GGUF file");
  command->add_option("--vocab", o.vocab_path, "copy the tokenizer of this GGUF")
      ->default_str("a byte-level one");
  command->add_option("-t,--threads", o.n_threads, "threads")
      ->default_str("one per core")
      ->check(compute_threads());
  command
      ->add_option("--stats-tokens", flags->stats_tokens,
                   "tokens to measure routing on after writing (0: skip)")
      ->check(at_least(0));
  command->add_flag("--list", flags->list, "list the presets");
  command->add_flag("--force", flags->force, "replace an existing output (never the --vocab file)");
  command->callback([&action, flags] { action = [flags] { return make_model(*flags); }; });
}

}  // namespace strata::tools
