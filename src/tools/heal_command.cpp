// strata heal -m MODEL --calib FILE -o OUT: output scales fitted on the calibration's routed
// samples, folded into the Q2_0 scales of the down projections (calib/heal.h).
#include <cstdio>

#include "base/progress.h"
#include "calib/heal.h"
#include "tools/calibrated_rewrite_flags.h"
#include "tools/cli_checks.h"
#include "tools/command.h"

namespace strata::tools {
namespace {

struct HealFlags : CalibratedRewriteFlags {
  int n_threads = 0;
};

int heal(const HealFlags& flags) {
  const auto calibration = flags.read_inputs();
  if (!calibration.ok()) return report_failure(calibration.status());
  HealOptions options;
  options.n_threads = flags.n_threads;
  options.overwrite = flags.force;
  Result<std::vector<LayerHeal>> heals = Status::error("not run");
  {
    ProgressBar progress("heal", uint64_t(calibration.value().model.n_layer));
    options.progress = &progress;
    heals = heal_model_file(flags.input_path, calibration.value(), flags.calib_path,
                            flags.output_path, options);
    if (heals.ok()) progress.finish();
  }
  if (!heals.ok()) return report_failure(heals.status());
  constexpr const char* kChoices[] = {"none", "per layer", "per expert"};
  for (size_t l = 0; l < heals.value().size(); ++l) {
    const LayerHeal& h = heals.value()[l];
    std::fprintf(stderr,
                 "layer %2zu: %-10s (layer scale %.4f; held-out squared error none %.4g, layer "
                 "%.4g, expert %.4g)\n",
                 l, kChoices[int(h.choice)], h.layer_scale, h.held_out_error[0],
                 h.held_out_error[1], h.held_out_error[2]);
  }
  std::fprintf(stderr, "wrote %s\n", flags.output_path.c_str());
  return 0;
}

}  // namespace

void add_heal_command(CLI::App& app, Action& action) {
  auto* command = app.add_subcommand(
      "heal", "fit output scales of Q2_0 experts on calibration samples and fold them in");
  auto flags = std::make_shared<HealFlags>();
  add_calibrated_rewrite_flags(command, *flags);
  command->add_option("-t,--threads", flags->n_threads, "threads")
      ->default_str("one per core")
      ->check(compute_threads());
  command->callback([&action, flags] { action = [flags] { return heal(*flags); }; });
}

}  // namespace strata::tools
