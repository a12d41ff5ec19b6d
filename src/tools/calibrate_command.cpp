// strata calibrate -m MODEL -f TEXT... -o MODEL.calib [--exclude-suite SUITE]...: what the routed
// experts see on calibration text (calib/expert_calibration.h), for `quantize --calib`.
//
// TEXT is a JSON Lines file of documents ({"id", "text", ...}, as ../shared/eval holds) or any
// other file, read as one document. Documents are taken one from each file in turn (so that
// every domain is in the text however --max-tokens cuts it) and tokenized whole. Text that is
// scored must not calibrate: --exclude-suite drops every document a window of that suite scores
// (same file name and document id), and the file records which documents were used.
#include <strata/text_tokenizer.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <set>

#include "base/progress.h"
#include "base/whole_file.h"
#include "calib/calibration_file.h"
#include "calib/expert_calibration.h"
#include "eval/suite.h"
#include "tools/cli_checks.h"
#include "tools/command.h"
#include "tools/output_files.h"

namespace strata::tools {
namespace {

struct CalibrateFlags {
  std::string model_path;
  std::vector<std::string> texts;
  std::vector<std::string> exclude_suites;
  std::string out_path;
  int64_t max_tokens = 65536;
  int64_t samples = 256;
  int n_threads = 0;
  bool force = false;
};

struct Document {
  std::string name;  // "file:id"
  std::string text;
};

// The documents of one file; those named in `excluded` ("file:id") are left out and counted.
Result<std::vector<Document>> read_documents(const std::string& path,
                                             const std::set<std::string>& excluded,
                                             int64_t& n_excluded) {
  STRATA_ASSIGN_OR_RETURN(const std::string contents, read_whole_text(path));
  const std::string file = std::filesystem::path(path).filename().string();
  std::vector<Document> documents;
  if (!path.ends_with(".jsonl")) {
    documents.push_back({file, contents});
    return documents;
  }
  size_t line_start = 0;
  for (int64_t line = 1; line_start < contents.size(); ++line) {
    size_t end = contents.find('\n', line_start);
    if (end == std::string::npos) end = contents.size();
    const std::string_view text(contents.data() + line_start, end - line_start);
    line_start = end + 1;
    if (text.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    const auto json = nlohmann::json::parse(text, nullptr, false);
    if (json.is_discarded() || !json.is_object() || !json.contains("id") ||
        !json["id"].is_string() || !json.contains("text") || !json["text"].is_string())
      return Status::errorf("{}:{}: not a document (a JSON object with string \"id\" and \"text\")",
                            path, line);
    const std::string name = file + ":" + json["id"].get<std::string>();
    if (excluded.contains(name)) {
      ++n_excluded;
      continue;
    }
    documents.push_back({name, json["text"].get<std::string>()});
  }
  return documents;
}

Result<std::set<std::string>> scored_documents(const std::vector<std::string>& suites) {
  std::set<std::string> names;
  for (const std::string& path : suites) {
    STRATA_ASSIGN_OR_RETURN(const eval::Suite suite, eval::read_suite(path));
    for (const eval::SuiteWindow& w : suite.windows) names.insert(w.source + ":" + w.document);
  }
  return names;
}

int calibrate(const CalibrateFlags& flags) {
  CommandInputs inputs;
  inputs.add_model(flags.model_path);
  for (const std::string& text : flags.texts) inputs.add_file("the text", text);
  for (const std::string& suite : flags.exclude_suites) inputs.add_file("the suite", suite);
  if (const Status status = inputs.check_outputs({flags.out_path}, flags.force); !status.ok())
    return report_failure(status);
  const auto excluded = scored_documents(flags.exclude_suites);
  if (!excluded.ok()) return report_failure(excluded.status());
  const auto tokenizer = TextTokenizer::open(flags.model_path);
  if (!tokenizer.ok()) return report_failure(tokenizer.status());

  std::vector<std::vector<Document>> files;
  int64_t n_excluded = 0;
  for (const std::string& path : flags.texts) {
    auto documents = read_documents(path, excluded.value(), n_excluded);
    if (!documents.ok()) return report_failure(documents.status());
    files.push_back(std::move(documents.value()));
  }
  std::vector<std::vector<int32_t>> sequences;
  std::vector<std::string> used;
  int64_t total = 0;
  for (size_t turn = 0; total < flags.max_tokens; ++turn) {
    bool any = false;
    for (const auto& documents : files) {
      if (turn >= documents.size() || total >= flags.max_tokens) continue;
      any = true;
      std::vector<int32_t> tokens = tokenizer.value()->encode(documents[turn].text);
      tokens.resize(size_t(std::min<int64_t>(int64_t(tokens.size()), flags.max_tokens - total)));
      total += int64_t(tokens.size());
      sequences.push_back(std::move(tokens));
      used.push_back(documents[turn].name);
    }
    if (!any) break;
  }
  std::fprintf(
      stderr, "calibrate: %zu documents, %lld tokens%s\n", used.size(),
      static_cast<long long>(total),
      flags.exclude_suites.empty()
          ? ""
          : fmt::format(" ({} documents left out: scored by the suites)", n_excluded).c_str());
  CalibrationOptions options;
  options.n_threads = flags.n_threads;
  options.n_samples = flags.samples;
  Result<ExpertCalibration> calibration = Status::error("not run");
  {
    ProgressBar progress("calibrate", uint64_t(total));
    options.progress = &progress;
    calibration = calibrate_experts(flags.model_path, sequences, used, options);
    if (calibration.ok()) progress.finish();
  }
  if (!calibration.ok()) return report_failure(calibration.status());
  if (const Status written = write_calibration(calibration.value(), flags.out_path); !written.ok())
    return report_failure(written);
  std::fprintf(stderr, "wrote %s: %lld tokens of %zu documents, %lld healing samples per layer\n",
               flags.out_path.c_str(), static_cast<long long>(calibration.value().n_tokens),
               used.size(), static_cast<long long>(calibration.value().n_samples));
  return 0;
}

}  // namespace

void add_calibrate_command(CLI::App& app, Action& action) {
  auto* command = app.add_subcommand(
      "calibrate", "record what the routed experts see on calibration text (for quantize --calib)");
  auto flags = std::make_shared<CalibrateFlags>();
  command->add_option("-m,--model", flags->model_path, "GGUF model (the F16 original is best)")
      ->required();
  command->add_option("-f,--file", flags->texts, "text: JSON Lines documents or a plain file")
      ->required()
      ->check(CLI::ExistingFile);
  command
      ->add_option("--exclude-suite", flags->exclude_suites,
                   "leave out every document this eval suite scores (repeat for more)")
      ->check(CLI::ExistingFile);
  command->add_option("--max-tokens", flags->max_tokens, "tokens to run")->check(at_least(1));
  command->add_option("--samples", flags->samples, "healing samples per layer")->check(at_least(1));
  command->add_option("-t,--threads", flags->n_threads, "threads")
      ->default_str("one per core")
      ->check(compute_threads());
  command->add_option("-o,--out", flags->out_path, "calibration file to write")->required();
  command->add_flag("--force", flags->force, "replace an existing file (never an input)");
  command->callback([&action, flags] { action = [flags] { return calibrate(*flags); }; });
}

}  // namespace strata::tools
