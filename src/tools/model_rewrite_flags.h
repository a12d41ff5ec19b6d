// The flags of the commands that write a model derived from another (quantize, repack): the
// input, the output and --force (checked before any work, base/output_path.h).
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "gguf/gguf_file.h"

namespace strata::tools {

struct ModelRewriteFlags {
  std::string input_path;
  std::string output_path;
  bool force = false;

  // The input's size, all parts of a split model, for a progress bar (0 if the model cannot
  // be opened: the command then reports why).
  uint64_t input_bytes() const {
    const auto file = gguf::GgufFile::open(input_path);
    return file.ok() ? file.value()->file_size() : 0;
  }
};

inline void add_model_rewrite_flags(CLI::App* command, ModelRewriteFlags& flags) {
  command->add_option("-m,--model", flags.input_path, "input GGUF model")->required();
  command->add_option("-o,--output", flags.output_path, "output GGUF file")->required();
  command->add_flag("--force", flags.force, "replace an existing output (never the input)");
}

}  // namespace strata::tools
