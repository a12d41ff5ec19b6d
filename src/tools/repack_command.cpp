// strata repack -m IN.gguf -o OUT.gguf [--force]: the same model in the unit layout, each
// expert unit one range of the file, so the expert store reads it with one request
// (model/unit_layout.h). Bytes are copied, never converted.
#include <cstdio>
#include <filesystem>
#include <memory>

#include "base/progress.h"
#include "model/unit_layout.h"
#include "tools/cli_checks.h"
#include "tools/command.h"

namespace strata::tools {
namespace {

struct RepackFlags {
  std::string input_path;
  std::string output_path;
  bool force = false;
};

int repack(const RepackFlags& flags) {
  Result<RepackSummary> summary = Status::error("not run");
  {
    std::error_code error;
    const auto input_bytes = std::filesystem::file_size(flags.input_path, error);
    ProgressBar progress("repack", error ? 0 : input_bytes);
    summary = repack_model_file(flags.input_path, flags.output_path, flags.force, &progress);
  }
  if (!summary.ok()) return report_failure(summary.status());
  const RepackSummary& s = summary.value();
  std::fprintf(stderr,
               "wrote %s: %d expert units, each one range (%.2f KiB in layer 0), %.1f MiB of "
               "experts; all tensors %.1f MiB\n",
               flags.output_path.c_str(), s.n_units, double(s.unit_bytes) / 1024,
               double(s.expert_bytes) / 1048576, double(s.tensor_bytes) / 1048576);
  return 0;
}

}  // namespace

void add_repack_command(CLI::App& app, Action& action) {
  auto* command = app.add_subcommand(
      "repack",
      "write the model in the unit layout: each routed expert's gate, up and down slices next "
      "to each other, so the expert store reads an expert with one request instead of three. "
      "Bytes are copied unchanged; the file is for Strata (llama.cpp reads these models' experts "
      "only as stacked tensors)");
  auto flags = std::make_shared<RepackFlags>();
  command->add_option("-m,--model", flags->input_path, "input GGUF model")->required();
  command->add_option("-o,--output", flags->output_path, "output GGUF file")
      ->required()
      ->check(in_existing_directory());
  command->add_flag("--force", flags->force, "replace an existing output (never the input)");
  command->callback([&action, flags] { action = [flags] { return repack(*flags); }; });
}

}  // namespace strata::tools
