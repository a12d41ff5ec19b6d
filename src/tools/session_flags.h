// Flags shared by the sub-commands that run a model (run, chat, logits).
#pragma once

#include <strata/session.h>
#include <CLI/CLI.hpp>

namespace strata::tools {

inline void add_session_flags(CLI::App* command, SessionOptions& options) {
  command->add_option("-m,--model", options.model_path, "GGUF model file")->required();
  command->add_option("-t,--threads", options.n_threads, "compute threads (default: one per core)")
      ->check(CLI::NonNegativeNumber);
  command->add_option("-c,--ctx", options.n_ctx, "context length (default: min(trained, 4096))")
      ->check(CLI::NonNegativeNumber);
  command->add_option("--prefill-chunk", options.prefill_chunk, "prompt tokens per forward batch")
      ->check(CLI::PositiveNumber);
}

inline void add_sampling_flags(CLI::App* command, GenerateOptions& options) {
  command->add_option("-n,--n-predict", options.max_tokens, "tokens to generate")
      ->check(CLI::NonNegativeNumber);
  command->add_option("--temp", options.temperature, "temperature (0: greedy)");
  command->add_option("--top-k", options.top_k, "keep the k most likely tokens (0: off)");
  command->add_option("--top-p", options.top_p, "nucleus sampling threshold (1: off)");
  command->add_option("--min-p", options.min_p, "drop tokens below min-p x the best (0: off)");
  command->add_option("--repeat-penalty", options.repeat_penalty,
                      "penalty on recent tokens (1: off)");
  command->add_option("--repeat-last-n", options.repeat_last_n, "how many recent tokens it sees");
  command->add_option("-s,--seed", options.seed, "sampling seed");
}

}  // namespace strata::tools
