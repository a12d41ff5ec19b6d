// strata bench -m MODEL [-m MODEL ...]: prefill and decode speed, n runs interleaved, JSON
// with provenance to --out, a bar chart to --plot and a Markdown table to stdout.
#include <strata/benchmark.h>

#include <cstdio>

#include "base/atomic_file.h"
#include "tools/command.h"
#include "tools/output_files.h"
#include "tools/session_flags.h"

namespace strata::tools {

void add_bench_command(CLI::App& app, Action& action) {
  auto* command = app.add_subcommand("bench", "speed suite with provenance (JSON)");
  auto options = std::make_shared<BenchmarkOptions>();
  auto out = std::make_shared<std::string>();
  auto plot = std::make_shared<std::string>();
  auto readahead_budget = std::make_shared<std::string>();
  auto force = std::make_shared<bool>(false);
  command->add_option("-m,--model", options->model_paths, "model(s); several are run interleaved")
      ->required();
  command->add_option("--prompt-tokens", options->prompt_lengths, "prompt lengths to measure")
      ->check(at_least(1));
  command->add_option("-n,--gen-tokens", options->generated_tokens, "tokens to decode per run")
      ->check(whole_number_from(1, INT32_MAX));
  command->add_option("-r,--repetitions", options->repetitions, "runs per configuration (>= 3)");
  command->add_option("-t,--threads", options->session.n_threads, "compute threads")
      ->check(compute_threads());
  command->add_option("--mem", options->memory_budgets,
                      "memory budgets to compare: none (all resident), a size (4G) or a share of "
                      "the model file (25%)");
  command->add_flag("--cold", options->cold,
                    "fresh session and dropped page cache before every run (root)");
  add_streaming_flags(command, options->session, *readahead_budget);
  command
      ->add_option("--device", options->devices,
                   "where the models compute, each a variant: cpu, cuda, auto (CUDA where this "
                   "build has it and a device answers, else the CPU)")
      ->default_str("auto")
      ->check(CLI::IsMember({"cpu", "cuda", "auto"}));
  command->add_option("--gpu", options->session.gpu, "CUDA device index")->check(at_least(0));
  command
      ->add_option("--cpu-experts", options->cpu_experts,
                   "misses of a device's arena the CPU computes from host memory, each a "
                   "variant: auto, off or at most N a decode layer")
      ->default_str("off")
      ->check(CLI::Validator(
          [](const std::string& text) {
            const Result<int> count = parse_cpu_experts(text);
            return count.ok() ? std::string() : count.status().message();
          },
          "auto|off|N"));
  command->add_option("--prompt-file", options->prompt_file, "prompt text")
      ->default_str("a built-in one");
  command->add_option("-o,--out", *out, "write the JSON record here");
  command->add_option("--plot", *plot,
                      "write an SVG chart here: decode as a share of its bound, and disk busy");
  command->add_flag("--force", *force, "replace existing --out and --plot files (never an input)");
  command->callback([&action, options, out, plot, readahead_budget, force] {
    action = [options, out, plot, readahead_budget, force] {
      CommandInputs inputs;
      for (const std::string& model : options->model_paths) inputs.add_model(model);
      inputs.add_file("the prompt file", options->prompt_file)
          .add_file("the predictor", options->session.next_expert_predictor_path);
      if (const Status status = inputs.check_outputs({*out, *plot}, *force); !status.ok())
        return report_failure(status);
      print_engine_notes(options->session);
      options->command_line = command_line();
      if (!readahead_budget->empty()) {
        const auto budget = parse_readahead_budget(*readahead_budget);
        if (!budget.ok()) return report_failure(budget.status());
        options->session.readahead_budget = budget.value();
      }
      const auto report = run_benchmark(
          *options, [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); });
      if (!report.ok()) return report_failure(report.status());
      for (const auto& [path, text] :
           {std::pair{*out, &report.value().json}, std::pair{*plot, &report.value().svg}}) {
        if (path.empty()) continue;
        const Status written = write_file_atomically(
            path, {reinterpret_cast<const uint8_t*>(text->data()), text->size()});
        if (!written.ok()) return report_failure(written);
      }
      std::fputs(report.value().markdown.c_str(), stdout);
      return 0;
    };
  });
}

}  // namespace strata::tools
