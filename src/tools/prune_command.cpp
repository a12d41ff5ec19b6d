// strata prune -m MODEL --keep N|P% --calib FILE -o OUT: drops each layer's least salient
// routed experts, measured on calibration text (calib/prune.h).
#include <fmt/format.h>

#include <charconv>
#include <cstdio>

#include "calib/prune.h"
#include "tools/calibrated_rewrite_flags.h"
#include "tools/cli_checks.h"
#include "tools/command.h"

namespace strata::tools {
namespace {

struct PruneFlags : CalibratedRewriteFlags {
  std::string keep;
  std::string saliency = "total";
};

// "48" or "75%" of n_expert (rounded to the nearest count).
Result<int64_t> parse_keep(const std::string& text, int64_t n_expert) {
  const bool percent = text.ends_with('%');
  const std::string number = percent ? text.substr(0, text.size() - 1) : text;
  double value = 0;
  const auto [end, error] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (error != std::errc() || end != number.data() + number.size() || number.empty() ||
      !(value > 0))
    return Status::errorf("prune: --keep {}: give a count of experts (48) or a share (75%)", text);
  const double count = percent ? value / 100.0 * double(n_expert) : value;
  if (!percent && count != double(int64_t(count)))
    return Status::errorf("prune: --keep {}: a count of experts is a whole number", text);
  return int64_t(count + 0.5);
}

int prune(const PruneFlags& flags) {
  const auto calibration = flags.read_inputs();
  if (!calibration.ok()) return report_failure(calibration.status());
  const auto keep = parse_keep(flags.keep, calibration.value().model.n_expert);
  if (!keep.ok()) return report_failure(keep.status());
  PruneOptions options;
  options.keep = keep.value();
  options.saliency = flags.saliency == "reap"    ? Saliency::kReap
                     : flags.saliency == "usage" ? Saliency::kUsage
                                                 : Saliency::kTotal;
  options.overwrite = flags.force;
  const auto summary = prune_model_file(flags.input_path, calibration.value(), flags.calib_path,
                                        flags.output_path, options);
  if (!summary.ok()) return report_failure(summary.status());
  std::fprintf(stderr, "wrote %s: %lld of %lld experts per layer (by %s saliency), %.1f MiB\n",
               flags.output_path.c_str(), static_cast<long long>(options.keep),
               static_cast<long long>(calibration.value().model.n_expert), flags.saliency.c_str(),
               double(summary.value().bytes_out) / 1048576);
  return 0;
}

}  // namespace

void add_prune_command(CLI::App& app, Action& action) {
  auto* command = app.add_subcommand(
      "prune", "drop each layer's least salient routed experts, measured on calibration text");
  auto flags = std::make_shared<PruneFlags>();
  add_calibrated_rewrite_flags(command, *flags);
  command
      ->add_option("--keep", flags->keep, "experts kept per layer: a count (48) or a share (75%)")
      ->required();
  command
      ->add_option("--saliency", flags->saliency,
                   "total: router-weighted output norm summed over the tokens (default); reap: "
                   "its mean; usage: how often each expert is picked")
      ->check(CLI::IsMember({"total", "reap", "usage"}));
  command->callback([&action, flags] { action = [flags] { return prune(*flags); }; });
}

}  // namespace strata::tools
