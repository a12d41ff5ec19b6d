// strata quantize -m IN.gguf --experts TYPE [--calib FILE] -o OUT.gguf [--force] [--threads N]:
// the same model with its routed experts rewritten in TYPE and everything else copied byte for
// byte (model/requantize.h), for measuring what each expert format costs. With --calib, Q2_0
// blocks minimize the error weighted by the calibration (calib/expert_importance.h).
//
// Each expert row is dequantized and quantized again. From a Q8_0 file that is a second
// quantization (the first made the Q8_0); it is what a user without the F16 original has, and
// it measures the target's error on top of Q8_0's, not the target's alone.
#include <cstdio>
#include <memory>

#include "base/progress.h"
#include "calib/calibration_file.h"
#include "calib/expert_calibration.h"
#include "calib/expert_importance.h"
#include "model/requantize.h"
#include "tools/cli_checks.h"
#include "tools/command.h"
#include "tools/model_rewrite_flags.h"
#include "tools/output_files.h"

namespace strata::tools {
namespace {

struct QuantizeFlags : ModelRewriteFlags {
  std::string expert_type;
  std::string calib_path;
  int n_threads = 0;
};

double mebibytes(uint64_t bytes) { return double(bytes) / 1048576; }

int quantize(const QuantizeFlags& flags) {
  const auto type = parse_quant_type(flags.expert_type);
  if (!type.ok()) return report_failure(type.status().with_prefix("quantize: --experts"));
  CommandInputs inputs;
  inputs.add_model(flags.input_path).add_file("the calibration", flags.calib_path);
  if (const Status status = inputs.check_outputs({flags.output_path}, flags.force); !status.ok())
    return report_failure(status);
  RequantizeOptions options;
  options.expert_type = type.value();
  options.n_threads = flags.n_threads;
  options.overwrite = flags.force;
  if (!flags.calib_path.empty()) {
    if (type.value() != QuantType::kQ2_0)
      return report_failure(Status::error("quantize: --calib applies to --experts q2_0 only"));
    auto calibration = read_calibration(flags.calib_path);
    if (!calibration.ok()) return report_failure(calibration.status());
    const auto model = calibrated_model(flags.input_path);
    if (!model.ok()) return report_failure(model.status());
    if (const Status matches = check_calibration_matches(calibration.value(), flags.calib_path,
                                                         model.value(), flags.input_path);
        !matches.ok())
      return report_failure(matches);
    options.importance = expert_importance(std::move(calibration.value()));
  }
  Result<RequantizeSummary> summary = Status::error("not run");
  {
    // Sized by the input, which the output roughly matches.
    ProgressBar progress("quantize", flags.input_bytes());
    options.progress = &progress;
    summary = requantize_model_file(flags.input_path, flags.output_path, options);
    if (summary.ok()) progress.finish();
  }
  if (!summary.ok()) return report_failure(summary.status());
  const RequantizeSummary& s = summary.value();
  std::fprintf(stderr, "wrote %s: %d expert tensors %s, %.1f -> %.1f MiB; all tensors %.1f MiB\n",
               flags.output_path.c_str(), s.n_expert_tensors, s.provenance.c_str(),
               mebibytes(s.expert_bytes_in), mebibytes(s.expert_bytes_out),
               mebibytes(s.tensor_bytes_out));
  return 0;
}

}  // namespace

void add_quantize_command(CLI::App& app, Action& action) {
  auto* command = app.add_subcommand(
      "quantize",
      "rewrite a model's routed experts in another format (everything else copied). Rows are "
      "dequantized and quantized again: from a Q8_0 file that is a second quantization, what a "
      "user without the F16 original has");
  auto flags = std::make_shared<QuantizeFlags>();
  add_model_rewrite_flags(command, *flags);
  command
      ->add_option("--experts", flags->expert_type,
                   "format of the routed experts: f32, f16, bf16, q8_0, q5_1, q5_0, q4_1, q4_0, "
                   "iq4_nl, q2_0 (Strata's own 2-bit format, which llama.cpp cannot read), and for "
                   "rows that are multiples of 256 iq4_xs, q6_k..q2_k")
      ->required();
  command
      ->add_option("--calib", flags->calib_path,
                   "calibration of this model (strata calibrate): Q2_0 blocks minimize the error "
                   "weighted by what each input channel carries")
      ->check(CLI::ExistingFile);
  command->add_option("-t,--threads", flags->n_threads, "threads")
      ->default_str("one per core")
      ->check(compute_threads());
  command->callback([&action, flags] { action = [flags] { return quantize(*flags); }; });
}

}  // namespace strata::tools
