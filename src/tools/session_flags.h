// Flags shared by the sub-commands that run a model (run, chat, logits).
#pragma once

#include <strata/session.h>
#include <CLI/CLI.hpp>

#include <cstdlib>

#include "experts/io_engine.h"
#include "runtime/byte_size.h"
#include "tools/cli_checks.h"
#include "tools/seed_option.h"

namespace strata::tools {

// --mem and --arena are parsed after CLI11: call resolve_session_flags().
struct SessionFlags {
  SessionOptions options;
  std::string memory_budget;
  std::string arena_share;
  std::string readahead_budget;
};

// How experts stream: routing, read-ahead, I/O and the arena's policy (run, chat, logits, eval,
// bench). `readahead_budget` is parsed afterwards with parse_readahead_budget().
inline void add_streaming_flags(CLI::App* command, SessionOptions& options,
                                std::string& readahead_budget) {
  command
      ->add_option("--moce", options.moce_bonus,
                   "cache-aware routing: bonus on the router logits of resident experts (0: exact)")
      ->check(real_number("0 or more", [](double v) { return v >= 0; }));
  command
      ->add_option("--moce-protect", options.moce_protect,
                   "top picks always taken from the exact router logits")
      ->check(at_least(0));
  command
      ->add_option("--readahead", options.readahead,
                   "experts per layer to prefetch for the next layer (0: off)")
      ->default_str("top-k")
      ->check(at_least(0));
  command
      ->add_option("--readahead-layers", options.readahead_layers,
                   "how many layers ahead to predict and prefetch (0: 2 for expert units under 1 "
                   "MiB, else 1)")
      ->check(CLI::Range(0, 8));
  command
      ->add_option("--readahead-far", options.readahead_far,
                   "of each layer beyond the next, prefetch only this many top predictions")
      ->default_str("2")
      ->check(at_least(0));
  command
      ->add_option("--readahead-budget", readahead_budget,
                   "bytes of read-ahead a token may start, spread over its layers (e.g. 64M)")
      ->default_str("no limit");
  command->add_option("--io-threads", options.io_threads, "reader threads")
      ->check(whole_number_from(1, IoEngine::kMaxThreads));
  command
      ->add_option("--io-depth", options.io_depth,
                   "expert units io_uring keeps reading at once (0: 1 for units of 1 MiB or "
                   "more, else 6 x io-threads reads: units of 3 reads in a stacked file, of 1 "
                   "in the unit layout, see repack)")
      // The bench probes the same reads one range a request: kMaxRanges times the requests.
      ->check(whole_number_from(0, IoEngine::kMaxDepth / int(IoEngine::kMaxRanges)));
  command->add_option("--io", options.io_backend,
                      "I/O backend: auto (io_uring where available, else pread), pread or uring");
  command
      ->add_option("--cache-policy", options.cache_policy,
                   "expert arena replacement policy; only matters when experts stream")
      ->default_str("successor; predicted with --predictor")
      ->check(replacement_policy());
  command->add_option("--predictor", options.next_expert_predictor_path,
                      "next-expert predictor (strata fit-predictor): estimates which of each "
                      "layer's experts the next tokens use, for the arena's policy");
}

// Where the model computes (run, chat, logits, eval, bench, trace).
inline void add_device_flags(CLI::App* command, SessionOptions& options) {
  command
      ->add_option("--device", options.device,
                   "where the model computes: cpu, cuda, or auto (CUDA where this build has it "
                   "and a device answers, else the CPU)")
      ->default_str("auto")
      ->check(CLI::IsMember({"cpu", "cuda", "auto"}));
  command->add_option("--gpu", options.gpu, "CUDA device index")->check(at_least(0));
  command
      ->add_option_function<std::string>(
          "--gpu-mem",
          [&options](const std::string& text) {
            options.gpu_memory_budget = parse_byte_size(text).value();
          },
          "device memory budget (8G): the experts that do not fit are copied in as they are "
          "routed to, from host memory, or with --mem from the file through staging buffers")
      ->default_str("none, every expert in device memory")
      ->check(CLI::Validator(
          [](const std::string& text) {
            const Result<uint64_t> bytes = parse_byte_size(text);
            return !bytes.ok()   ? bytes.status().message()
                   : *bytes == 0 ? std::string("a budget must be above zero")
                                 : std::string();
          },
          "SIZE"));
  command
      ->add_option_function<std::string>(
          "--cpu-experts",
          [&options](const std::string& text) {
            options.cpu_experts = parse_cpu_experts(text).value();
          },
          "experts missing from a device's arena computed by the CPU from host memory instead "
          "of copied: auto (as many as finish sooner by the bus's and the CPU's measured "
          "rates), off, or at most N a decode layer")
      ->default_str("off")
      ->check(CLI::Validator(
          [](const std::string& text) {
            const Result<int> count = parse_cpu_experts(text);
            return count.ok() ? std::string() : count.status().message();
          },
          "auto|off|N"));
}

inline void add_session_flags(CLI::App* command, SessionFlags& flags) {
  SessionOptions& options = flags.options;
  command->add_option("-m,--model", options.model_path, "GGUF model file")->required();
  // --arena first, so that giving both says "--arena excludes --mem".
  auto* arena = command->add_option("--arena", flags.arena_share,
                                    "experiments: stream experts into an arena holding this "
                                    "share of them (25%), without an overall budget");
  command
      ->add_option("--mem", flags.memory_budget,
                   "memory budget of the whole process (512M, 4G, auto); experts stream from "
                   "the file into what it leaves")
      ->default_str("none, every expert resident")
      ->excludes(arena);
  add_streaming_flags(command, options, flags.readahead_budget);
  command->add_option("--warm", options.warm_path,
                      "expert usage file: preload its hottest experts, add this run's usage to "
                      "it at exit");
  add_device_flags(command, options);
  command->add_option("-t,--threads", options.n_threads, "compute threads")
      ->default_str("one per core")
      ->check(compute_threads());
  command->add_option("-c,--ctx,--ctx-size", options.n_ctx, "context length in tokens")
      ->default_str("min(trained, 4096)")
      ->check(at_least(0));
  command->add_option("--prefill-chunk", options.prefill_chunk, "prompt tokens per forward batch")
      ->check(at_least(1));
}

// The engine's notes on stderr, a line each, and its progress bars (on a terminal).
inline void print_engine_notes(SessionOptions& options) {
  options.on_note = [](NoteKind, std::string_view line) {
    std::fprintf(stderr, "%.*s\n", int(line.size()), line.data());
  };
  options.show_progress = true;
}

// Parses what CLI11 could not (--arena, --mem, --readahead-budget) and sends the engine's notes
// to stderr.
inline Status resolve_session_flags(SessionFlags& flags) {
  print_engine_notes(flags.options);
  if (!flags.arena_share.empty()) {
    const std::string& text = flags.arena_share;
    const double value = std::atof(text.c_str()) / (text.back() == '%' ? 100.0 : 1.0);
    if (!(value > 0 && value <= 1))
      return Status::errorf("--arena: expected a share such as 25% or 0.25, got '{}'", text);
    flags.options.arena_share = value;
  }
  if (!flags.readahead_budget.empty()) {
    STRATA_ASSIGN_OR_RETURN(flags.options.readahead_budget,
                            parse_readahead_budget(flags.readahead_budget));
  }
  if (flags.memory_budget.empty()) return Status();
  STRATA_ASSIGN_OR_RETURN(const MemoryBudget budget, parse_memory_budget(flags.memory_budget));
  flags.options.memory_budget = budget.bytes;
  flags.options.memory_budget_basis = budget.basis;
  return Status();
}

inline void add_sampling_flags(CLI::App* command, GenerateOptions& options) {
  command->add_option("-n,--n-predict", options.max_tokens, "tokens to generate")
      ->check(at_least(0));
  command->add_option("--temp", options.temperature, "temperature (0: greedy)")
      ->check(real_number("0 or more", [](double v) { return v >= 0; }));
  command->add_option("--top-k", options.top_k, "keep the k most likely tokens (0: off)")
      ->check(at_least(0));
  command->add_option("--top-p", options.top_p, "nucleus sampling threshold (1: off)")
      ->check(real_number("in (0, 1]", [](double v) { return v > 0 && v <= 1; }));
  command->add_option("--min-p", options.min_p, "drop tokens below min-p x the best (0: off)")
      ->check(real_number("in [0, 1]", [](double v) { return v >= 0 && v <= 1; }));
  command
      ->add_option("--repeat-penalty", options.repeat_penalty, "penalty on recent tokens (1: off)")
      ->check(real_number("above 0", [](double v) { return v > 0; }));
  command->add_option("--repeat-last-n", options.repeat_last_n, "how many recent tokens it sees")
      ->check(at_least(0));
  add_seed_option(command, "-s,--seed", options.seed, "seed", "sampling seed");
}

}  // namespace strata::tools
