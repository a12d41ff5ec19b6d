// strata eval: teacher-forced KLD / top-1 / perplexity of a candidate against a reference
// (src/eval/). Sub-commands:
//
//   make-suite --eval-dir DIR --vocab MODEL --windows N --prompt P --scored S --seed X -o SUITE
//       windows drawn from DIR/*.jsonl (eval/suite.h)
//   tokens --suite SUITE -o DIR
//       DIR/<window>.tokens.json for every window, the input of `strata logits`
//   run --suite SUITE -m MODEL [session flags] [--ref-model R --ref-* | --ref-logits DIR]
//       [--batch] [--save-ref DIR] [-o JSON] [--md FILE] [--plot SVG]
//       scores the candidate (-m and the flags of `strata run`) against a reference: a model
//       (default: the candidate's file with exact routing, every expert resident) or stored
//       logits; Markdown to stdout
//   compare A.json B.json [-o JSON] [--md FILE] [--plot SVG]
//       paired bootstrap of two runs' differences
//   table RUN.json... [-o JSON] [--md FILE] [--curve SVG] [--bars SVG]
//       runs side by side: the price list of lossy knobs (eval/run_table.h)
#include <strata/text_tokenizer.h>

#include <cstdio>
#include <filesystem>
#include <memory>

#include "base/atomic_file.h"
#include "eval/comparison.h"
#include "eval/reference_logits.h"
#include "eval/report.h"
#include "eval/run_table.h"
#include "eval/scoring.h"
#include "eval/suite.h"
#include "tools/command.h"
#include "tools/output_files.h"
#include "tools/seed_option.h"
#include "tools/session_flags.h"

namespace strata::tools {
namespace {

namespace fs = std::filesystem;

struct Outputs {
  std::string json_path, markdown_path, plot_path;
  bool force = false;
};

struct SuiteFlags {
  eval::SuiteSpec spec;
  std::string out_path;
  bool force = false;
};

struct TokensFlags {
  std::string suite_path, eval_dir, vocab, out_dir;
  bool force = false;
};

struct RunFlags {
  std::string suite_path, eval_dir;
  SessionFlags candidate;
  SessionFlags reference;
  std::string reference_logits, save_reference;
  int save_top_k = -1;
  bool batch = false, reference_batch = false;
  eval::BootstrapOptions bootstrap;
  Outputs outputs;
};

Status write_text(const std::string& path, const std::string& text) {
  if (path.empty()) return Status();
  return write_file_atomically(path, text);
}

void print_line(const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); }

// The files a command writes into `dir` (eval tokens -o, --save-ref), to check by the rule
// where `dir` exists; a missing one is created, empty.
std::vector<std::string> files_in_existing_directory(const std::string& dir,
                                                     std::vector<std::string> files) {
  std::error_code error;
  return fs::exists(dir, error) ? files : std::vector<std::string>();
}

// The suite file and the documents its windows are drawn from.
void add_suite_inputs(CommandInputs& inputs, const std::string& suite_path,
                      const eval::Suite& suite, const std::string& eval_dir) {
  inputs.add_file("the suite", suite_path);
  for (const eval::SuiteWindow& window : suite.windows)
    inputs.add_file(
        "a document of the suite",
        (fs::path(eval_dir.empty() ? eval::suite_eval_dir(suite, suite_path) : eval_dir) /
         window.source)
            .string());
}

// The windows' tokens, from --eval-dir where given, else from the suite's own directory.
Result<std::vector<std::vector<int32_t>>> suite_tokens(const eval::Suite& suite,
                                                       const std::string& suite_path,
                                                       const std::string& eval_dir,
                                                       const std::string& tokenizer_path) {
  STRATA_ASSIGN_OR_RETURN(auto tokenizer, TextTokenizer::open(tokenizer_path));
  return eval::load_window_tokens(
      suite, eval_dir.empty() ? eval::suite_eval_dir(suite, suite_path) : eval_dir, *tokenizer);
}

int make_suite(const SuiteFlags& flags) {
  const eval::SuiteSpec& spec = flags.spec;
  const std::string& out = flags.out_path;
  CommandInputs inputs;
  inputs.add_model(spec.tokenizer_path, "the vocabulary");
  std::error_code error;  // a directory that cannot be listed, make_suite() reports
  for (const auto& entry : fs::directory_iterator(spec.eval_dir, error))
    if (entry.path().extension() == ".jsonl") inputs.add_file("a document", entry.path().string());
  if (const Status status = inputs.check_outputs({out}, flags.force); !status.ok())
    return report_failure(status);
  const auto tokenizer = TextTokenizer::open(spec.tokenizer_path);
  if (!tokenizer.ok()) return report_failure(tokenizer.status());
  auto suite = eval::make_suite(spec, *tokenizer.value(), print_line);
  if (!suite.ok()) return report_failure(suite.status());
  suite.value().eval_dir = eval::eval_dir_for_suite(spec.eval_dir, out);
  if (const Status s = write_text(out, eval::encode_suite(suite.value())); !s.ok())
    return report_failure(s);
  std::fprintf(stderr, "%s: %zu windows of %lld + %lld tokens\n", out.c_str(),
               suite.value().windows.size(), static_cast<long long>(spec.prompt),
               static_cast<long long>(spec.scored));
  return 0;
}

int write_tokens(const TokensFlags& flags) {
  const auto suite = eval::read_suite(flags.suite_path);
  if (!suite.ok()) return report_failure(suite.status());
  const std::string& vocab = flags.vocab.empty() ? suite.value().tokenizer_path : flags.vocab;
  CommandInputs inputs;
  add_suite_inputs(inputs, flags.suite_path, suite.value(), flags.eval_dir);
  inputs.add_model(vocab, "the vocabulary");
  const Status writable = inputs.check_outputs(
      files_in_existing_directory(flags.out_dir,
                                  eval::window_tokens_files(flags.out_dir, suite.value())),
      flags.force);
  if (!writable.ok()) return report_failure(writable);
  const auto tokens = suite_tokens(suite.value(), flags.suite_path, flags.eval_dir, vocab);
  if (!tokens.ok()) return report_failure(tokens.status());
  const Status written = eval::write_window_tokens(flags.out_dir, suite.value(), tokens.value());
  if (!written.ok()) return report_failure(written);
  return 0;
}

Result<eval::ScoringConfig> scoring_config(RunFlags& flags) {
  STRATA_RETURN_IF_ERROR(resolve_session_flags(flags.candidate));
  eval::ScoringConfig config;
  config.candidate = flags.candidate.options;
  config.mode = flags.batch ? eval::ScoringMode::kBatch : eval::ScoringMode::kDecode;
  config.reference_mode =
      flags.batch || flags.reference_batch ? eval::ScoringMode::kBatch : eval::ScoringMode::kDecode;
  if (!flags.reference_logits.empty()) {
    if (!flags.save_reference.empty())
      return Status::error("eval run: --save-ref needs a reference model, not --ref-logits");
    config.reference_logits_dir = flags.reference_logits;
    return config;
  }
  STRATA_RETURN_IF_ERROR(resolve_session_flags(flags.reference).with_prefix("reference"));
  SessionOptions reference = flags.reference.options;
  if (reference.model_path.empty()) reference.model_path = config.candidate.model_path;
  reference.n_threads = config.candidate.n_threads;
  reference.n_ctx = config.candidate.n_ctx;
  config.reference_model = reference;
  config.save_reference_dir = flags.save_reference;
  config.replace_saved_reference = flags.outputs.force;
  config.save_top_k = flags.save_top_k;
  return config;
}

// Refuses, before any scoring, outputs that are inputs or exist (without --force); the stored
// reference files count among both.
Status check_run_outputs(const RunFlags& flags, const eval::Suite& suite) {
  CommandInputs inputs;
  add_suite_inputs(inputs, flags.suite_path, suite, flags.eval_dir);
  inputs.add_session(flags.candidate.options)
      .add_model(flags.reference.options.model_path, "the reference model");
  if (!flags.reference_logits.empty())
    for (const std::string& path : eval::reference_files(flags.reference_logits, suite))
      inputs.add_file("a stored reference", path);
  std::vector<std::string> outputs = {flags.outputs.json_path, flags.outputs.markdown_path,
                                      flags.outputs.plot_path};
  if (!flags.save_reference.empty())
    for (const std::string& path : files_in_existing_directory(
             flags.save_reference, eval::reference_files(flags.save_reference, suite)))
      outputs.push_back(path);
  return inputs.check_outputs(outputs, flags.outputs.force);
}

int run(RunFlags& flags) {
  eval::RunInputs inputs{flags.suite_path, command_line(), eval::utc_now(), flags.bootstrap};
  const auto suite = eval::read_suite(flags.suite_path);
  if (!suite.ok()) return report_failure(suite.status());
  if (const Status status = check_run_outputs(flags, suite.value()); !status.ok())
    return report_failure(status);
  const auto config = scoring_config(flags);
  if (!config.ok()) return report_failure(config.status());
  const auto tokens = suite_tokens(suite.value(), flags.suite_path, flags.eval_dir,
                                   config.value().candidate.model_path);
  if (!tokens.ok()) return report_failure(tokens.status());
  const auto result = eval::score_suite(suite.value(), tokens.value(), config.value(), print_line);
  if (!result.ok()) return report_failure(result.status());
  const auto groups = eval::summarize_groups(suite.value(), result.value(), flags.bootstrap);
  const auto json = eval::run_json(suite.value(), result.value(), groups, inputs);
  if (!json.ok()) return report_failure(json.status());
  const std::string markdown = eval::run_markdown(suite.value(), result.value(), groups, inputs);
  for (const auto& [path, text] :
       {std::pair{flags.outputs.json_path, json.value()},
        std::pair{flags.outputs.markdown_path, markdown},
        std::pair{flags.outputs.plot_path,
                  flags.outputs.plot_path.empty() ? "" : eval::run_svg(result.value(), groups)}})
    if (const Status s = write_text(path, text); !s.ok()) return report_failure(s);
  std::fputs(markdown.c_str(), stdout);
  return 0;
}

int compare(const std::string& a_path, const std::string& b_path,
            const eval::BootstrapOptions& bootstrap, const Outputs& outputs) {
  const Status writable =
      CommandInputs()
          .add_file("the record", a_path)
          .add_file("the record", b_path)
          .check_outputs({outputs.json_path, outputs.markdown_path, outputs.plot_path},
                         outputs.force);
  if (!writable.ok()) return report_failure(writable);
  const auto a = eval::read_run_record(a_path);
  if (!a.ok()) return report_failure(a.status());
  const auto b = eval::read_run_record(b_path);
  if (!b.ok()) return report_failure(b.status());
  const auto groups = eval::compare_runs(a.value(), b.value(), bootstrap);
  if (!groups.ok()) return report_failure(groups.status());
  const std::string markdown =
      eval::comparison_markdown(a.value(), b.value(), groups.value(), bootstrap);
  for (const auto& [path, text] :
       {std::pair{outputs.json_path,
                  outputs.json_path.empty()
                      ? ""
                      : eval::comparison_json(a.value(), b.value(), groups.value(), bootstrap,
                                              command_line())},
        std::pair{outputs.markdown_path, markdown},
        std::pair{outputs.plot_path,
                  outputs.plot_path.empty()
                      ? ""
                      : eval::comparison_svg(a.value(), b.value(), groups.value())}})
    if (const Status s = write_text(path, text); !s.ok()) return report_failure(s);
  std::fputs(markdown.c_str(), stdout);
  return 0;
}

struct TableFlags {
  std::vector<std::string> records;
  std::string json_path, markdown_path, curve_path, bars_path;
  bool force = false;
};

int table(const TableFlags& flags) {
  CommandInputs inputs;
  for (const std::string& path : flags.records) inputs.add_file("the record", path);
  const Status writable = inputs.check_outputs(
      {flags.json_path, flags.markdown_path, flags.curve_path, flags.bars_path}, flags.force);
  if (!writable.ok()) return report_failure(writable);
  std::vector<eval::RunRecord> records;
  for (const std::string& path : flags.records) {
    auto record = eval::read_run_record(path);
    if (!record.ok()) return report_failure(record.status());
    records.push_back(std::move(record).value());
  }
  const auto rows = eval::table_rows(records);
  if (!rows.ok()) return report_failure(rows.status());
  const std::string markdown = eval::table_markdown(rows.value());
  for (const auto& [path, text] :
       {std::pair{flags.json_path,
                  flags.json_path.empty()
                      ? ""
                      : eval::table_json(rows.value(), records.front(), command_line())},
        std::pair{flags.markdown_path, markdown},
        std::pair{flags.curve_path,
                  flags.curve_path.empty() ? "" : eval::price_curve_svg(rows.value())},
        std::pair{flags.bars_path,
                  flags.bars_path.empty() ? "" : eval::kld_bars_svg(rows.value())}})
    if (const Status s = write_text(path, text); !s.ok()) return report_failure(s);
  std::fputs(markdown.c_str(), stdout);
  return 0;
}

void add_table(CLI::App* eval_app, Action& action) {
  auto* command = eval_app->add_subcommand("table", "runs side by side: what each knob costs");
  auto flags = std::make_shared<TableFlags>();
  command->add_option("records", flags->records, "`strata eval run` JSON records, one per row")
      ->required();
  command->add_option("-o,--out", flags->json_path, "JSON table");
  command->add_option("--md", flags->markdown_path, "Markdown table (also printed)");
  command->add_option("--curve", flags->curve_path,
                      "SVG: mean KLD against decode hit rate, a line per memory budget");
  command->add_option("--bars", flags->bars_path, "SVG: mean KLD per record with its interval");
  command->add_flag("--force", flags->force, "replace existing output files (never a record)");
  command->callback([&action, flags] { action = [flags] { return table(*flags); }; });
}

void add_output_flags(CLI::App* command, Outputs& outputs) {
  command->add_option("-o,--out", outputs.json_path, "JSON record with provenance");
  command->add_option("--md", outputs.markdown_path, "Markdown table (also printed)");
  command->add_option("--plot", outputs.plot_path, "SVG plot of mean KLD per domain");
  command->add_flag("--force", outputs.force, "replace existing output files (never an input)");
}

void add_bootstrap_flags(CLI::App* command, eval::BootstrapOptions& bootstrap) {
  command->add_option("--resamples", bootstrap.resamples, "bootstrap resamples")
      ->check(CLI::Range(1000, 1000000));
  add_seed_option(command, "--bootstrap-seed", bootstrap.seed, "bootstrap seed", "bootstrap seed");
}

// The reference model's options: the flags of `strata run` that shape logits, with --ref-.
void add_reference_flags(CLI::App* command, SessionFlags& flags) {
  SessionOptions& o = flags.options;
  command->add_option("--ref-model", o.model_path, "reference model")
      ->default_str("the candidate's file, exact and resident");
  auto* arena =
      command->add_option("--ref-arena", flags.arena_share, "reference: arena share (25%)");
  command->add_option("--ref-mem", flags.memory_budget, "reference: memory budget")
      ->excludes(arena);
  command->add_option("--ref-moce", o.moce_bonus, "reference: cache-aware routing bonus")
      ->check(real_number("0 or more", [](double v) { return v >= 0; }));
  command->add_option("--ref-moce-protect", o.moce_protect, "reference: exact top picks")
      ->check(at_least(0));
  command->add_option("--ref-readahead", o.readahead, "reference: experts prefetched per layer")
      ->default_str("top-k")
      ->check(at_least(0));
  command->add_option("--ref-cache-policy", o.cache_policy, "reference: arena policy")
      ->default_str("successor")
      ->check(replacement_policy());
  command->add_option("--ref-prefill-chunk", o.prefill_chunk, "reference: prompt tokens per batch")
      ->check(at_least(1));
}

void add_run(CLI::App* eval_app, Action& action) {
  auto* command = eval_app->add_subcommand("run", "score a candidate against a reference");
  auto flags = std::make_shared<RunFlags>();
  command->add_option("--suite", flags->suite_path, "suite file (make-suite)")->required();
  command->add_option("--eval-dir", flags->eval_dir, "where the suite's sources are")
      ->default_str("the suite's eval_dir, relative to the suite file");
  add_session_flags(command, flags->candidate);
  add_reference_flags(command, flags->reference);
  auto* logits = command->add_option("--ref-logits", flags->reference_logits,
                                     "stored reference logits (--save-ref, or `strata logits`)");
  for (const char* name : {"--ref-model", "--ref-mem", "--ref-arena", "--ref-moce"})
    logits->excludes(command->get_option(name));
  command->add_flag("--batch", flags->batch,
                    "teacher-forced batches instead of decode steps (knobs that keep routing)");
  command->add_flag("--ref-batch", flags->reference_batch,
                    "the reference model in batches, the candidate in decode steps");
  command->add_option("--save-ref", flags->save_reference, "store the reference's logits here");
  command
      ->add_option("--save-ref-top-k", flags->save_top_k,
                   "store the top K log-probs per row (0: full rows)")
      ->default_str("full rows up to 65,536 tokens of vocabulary, else 256")
      ->check(at_least(0));
  add_bootstrap_flags(command, flags->bootstrap);
  add_output_flags(command, flags->outputs);
  command->callback([&action, flags] { action = [flags] { return run(*flags); }; });
}

}  // namespace

void add_eval_command(CLI::App& app, Action& action) {
  auto* eval_app =
      app.add_subcommand("eval", "teacher-forced KLD / top-1 / PPL against a reference");
  eval_app->require_subcommand(1);

  auto* suite = eval_app->add_subcommand("make-suite", "draw evaluation windows from *.jsonl");
  auto suite_flags = std::make_shared<SuiteFlags>();
  eval::SuiteSpec* spec = &suite_flags->spec;
  suite->add_option("--eval-dir", spec->eval_dir, "directory of *.jsonl documents")->required();
  suite->add_option("--vocab", spec->tokenizer_path, "model or vocab file to tokenize with")
      ->required();
  suite->add_option("--windows", spec->windows_per_domain, "windows per domain")->required();
  suite->add_option("--prompt", spec->prompt, "tokens fed before scoring")->required();
  suite->add_option("--scored", spec->scored, "positions scored per window")->required();
  add_seed_option(suite, "--seed", spec->seed, "seed", "seed of the draw");
  suite->add_option("-o,--out", suite_flags->out_path, "suite file to write")->required();
  suite->add_flag("--force", suite_flags->force, "replace an existing suite file");
  suite->callback(
      [&action, suite_flags] { action = [suite_flags] { return make_suite(*suite_flags); }; });

  auto* tokens =
      eval_app->add_subcommand("tokens", "write each window's tokens for `strata logits`");
  auto tokens_flags = std::make_shared<TokensFlags>();
  tokens->add_option("--suite", tokens_flags->suite_path, "suite file")->required();
  tokens->add_option("--eval-dir", tokens_flags->eval_dir, "where the suite's sources are")
      ->default_str("the suite's eval_dir, relative to the suite file");
  tokens->add_option("--vocab", tokens_flags->vocab, "tokenizer")->default_str("the suite's");
  tokens->add_option("-o,--out", tokens_flags->out_dir, "directory to write")->required();
  tokens->add_flag("--force", tokens_flags->force, "replace existing token files");
  tokens->callback(
      [&action, tokens_flags] { action = [tokens_flags] { return write_tokens(*tokens_flags); }; });

  add_run(eval_app, action);
  add_table(eval_app, action);

  auto* compare_app = eval_app->add_subcommand("compare", "paired bootstrap of two runs");
  auto records = std::make_shared<std::vector<std::string>>();
  auto bootstrap = std::make_shared<eval::BootstrapOptions>();
  auto outputs = std::make_shared<Outputs>();
  compare_app->add_option("records", *records, "two `strata eval run` JSON records (A B)")
      ->required()
      ->expected(2);
  add_bootstrap_flags(compare_app, *bootstrap);
  add_output_flags(compare_app, *outputs);
  compare_app->callback([&action, records, bootstrap, outputs] {
    action = [records, bootstrap, outputs] {
      return compare((*records)[0], (*records)[1], *bootstrap, *outputs);
    };
  });
}

}  // namespace strata::tools
