// What a command reads, gathered before it does any work, to check each file it will write
// against (base/output_path.h): never one of its inputs, an existing file only with --force.
#pragma once

#include <strata/session.h>
#include <strata/status.h>

#include <string>
#include <string_view>
#include <vector>

#include "base/output_path.h"

namespace strata::tools {

class CommandInputs {
 public:
  // A file the command reads; nothing for an empty path or "-" (standard input).
  CommandInputs& add_file(std::string what, const std::string& path);
  // Every file of a model: each part of a split one (only the path given where the model
  // cannot be opened; the command then reports why).
  CommandInputs& add_model(const std::string& path, std::string_view what = "the model");
  // What a session reads: its model, its predictor and its --warm file.
  CommandInputs& add_session(const SessionOptions& options);

  // The files a command writes, each by the rule, and no two of them the same file (one
  // would replace the other). Empty paths are outputs not asked for. Then the --warm file,
  // read at the start and written back at the end: no --force needed, but never another
  // input, and no other output may be it.
  Status check_outputs(const std::vector<std::string>& paths, bool force) const;

 private:
  std::vector<CommandInput> inputs_;
  std::string warm_path_;
};

}  // namespace strata::tools
