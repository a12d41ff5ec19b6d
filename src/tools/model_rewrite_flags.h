// The flags of the commands that write a model derived from another (quantize, repack): the
// input, the output (its directory checked before any work) and --force.
#pragma once

#include <CLI/CLI.hpp>

#include <filesystem>
#include <string>

#include "tools/cli_checks.h"

namespace strata::tools {

struct ModelRewriteFlags {
  std::string input_path;
  std::string output_path;
  bool force = false;

  // The input's size, for a progress bar (0 if it cannot be read: the bar only shows progress).
  uint64_t input_bytes() const {
    std::error_code error;
    const auto bytes = std::filesystem::file_size(input_path, error);
    return error ? 0 : bytes;
  }
};

inline void add_model_rewrite_flags(CLI::App* command, ModelRewriteFlags& flags) {
  command->add_option("-m,--model", flags.input_path, "input GGUF model")->required();
  command->add_option("-o,--output", flags.output_path, "output GGUF file")
      ->required()
      ->check(in_existing_directory());
  command->add_flag("--force", flags.force, "replace an existing output (never the input)");
}

}  // namespace strata::tools
