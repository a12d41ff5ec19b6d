// strata repack -m IN.gguf -o OUT.gguf [--layout units|stacked] [--grouped] [--force]: the same
// model in the unit layout, each expert unit one range of the file, so the expert store reads
// it with one request (model/unit_layout.h). Bytes are copied, never converted, except Q4_0
// rows put into (or out of) row groups.
#include <cstdio>
#include <memory>

#include "base/progress.h"
#include "model/unit_layout.h"
#include "tools/command.h"
#include "tools/model_rewrite_flags.h"

namespace strata::tools {
namespace {

struct RepackFlags : ModelRewriteFlags {
  std::string layout = "units";
  bool grouped = false;
};

int repack(const RepackFlags& flags) {
  const RepackOptions options{
      .layout = flags.layout == "stacked" ? ExpertFileLayout::kStacked : ExpertFileLayout::kUnits,
      .grouped_rows = flags.grouped,
      .overwrite = flags.force};
  const ExpertFileLayout layout = options.layout;
  Result<RepackSummary> summary = Status::error("not run");
  {
    ProgressBar progress("repack", flags.input_bytes());
    summary = repack_model_file(flags.input_path, flags.output_path, options, &progress);
    if (summary.ok()) progress.finish();
  }
  if (!summary.ok()) return report_failure(summary.status());
  const RepackSummary& s = summary.value();
  std::fprintf(stderr,
               "wrote %s: %d expert units, %s (%.2f KiB in layer 0)%s, %.1f MiB of experts; "
               "all tensors %.1f MiB\n",
               flags.output_path.c_str(), s.n_units,
               layout == ExpertFileLayout::kUnits ? "each one range" : "stacked by layer",
               double(s.unit_bytes) / 1024, options.grouped_rows ? ", Q4_0 rows grouped" : "",
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
      "only as stacked tensors, which --layout stacked writes back)");
  auto flags = std::make_shared<RepackFlags>();
  add_model_rewrite_flags(command, *flags);
  command
      ->add_option("--layout", flags->layout,
                   "units (default): one read per expert; stacked: three tensors per layer, as "
                   "llama.cpp writes them (the way back)")
      ->check(CLI::IsMember({"units", "stacked"}));
  command->add_flag(
      "--grouped", flags->grouped,
      "store Q4_0 matrices in row groups, the order Strata's AVX-512 kernel reads, so that "
      "neither loading nor each read of an expert regroups them (CPUs without the kernel "
      "ungroup them instead); without it, rows are written in the GGUF order");
  command->callback([&action, flags] { action = [flags] { return repack(*flags); }; });
}

}  // namespace strata::tools
