#include "tools/output_files.h"

#include <filesystem>

#include "gguf/gguf_file.h"

namespace strata::tools {

CommandInputs& CommandInputs::add_file(std::string what, const std::string& path) {
  if (!path.empty() && path != "-") inputs_.push_back({std::move(what), path});
  return *this;
}

CommandInputs& CommandInputs::add_model(const std::string& path, std::string_view what) {
  if (path.empty()) return *this;
  const auto model = gguf::GgufFile::open(path);
  if (!model.ok()) return add_file(std::string(what), path);
  for (CommandInput& part : gguf::model_inputs(*model.value(), what))
    inputs_.push_back(std::move(part));
  return *this;
}

CommandInputs& CommandInputs::add_session(const SessionOptions& options) {
  add_model(options.model_path);
  add_file("the predictor", options.next_expert_predictor_path);
  warm_path_ = options.warm_path;
  return *this;
}

namespace {

// Two names of one file compare equal: symlinks of what exists resolved, the rest normalized.
std::filesystem::path resolved(const std::string& path) {
  std::error_code error;
  std::filesystem::path canonical = std::filesystem::weakly_canonical(path, error);
  return error ? std::filesystem::absolute(path).lexically_normal() : canonical;
}

}  // namespace

Status CommandInputs::check_outputs(const std::vector<std::string>& paths, bool force) const {
  std::vector<CommandInput> inputs = inputs_;
  std::vector<std::filesystem::path> checked;
  if (!warm_path_.empty()) {
    STRATA_RETURN_IF_ERROR(check_output_path(warm_path_, inputs_, ExistingOutput::kUpdate));
    inputs.push_back({"the warm-start file", warm_path_});
    checked.push_back(resolved(warm_path_));
  }
  for (const std::string& path : paths) {
    if (path.empty()) continue;
    STRATA_RETURN_IF_ERROR(check_output_path(path, inputs, existing_output(force)));
    // A device takes any number of outputs (-o /dev/null --plot /dev/null).
    std::error_code error;
    if (std::filesystem::is_character_file(path, error)) continue;
    for (const std::filesystem::path& earlier : checked)
      if (earlier == resolved(path)) return Status::errorf("{}: named for two outputs", path);
    checked.push_back(resolved(path));
  }
  return Status();
}

}  // namespace strata::tools
