// strata logits -m MODEL --tokens FILE.json --out FILE.bin: teacher-forced logits of a token
// sequence, little-endian float32 [n_tokens][n_vocab], row i = the logits after token i.
#include <strata/session.h>

#include <nlohmann/json.hpp>

#include <cstdio>

#include "base/atomic_file.h"
#include "base/whole_file.h"
#include "tools/command.h"
#include "tools/output_files.h"
#include "tools/session_flags.h"

namespace strata::tools {
namespace {

Result<std::vector<int32_t>> read_token_file(const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(const std::string text, read_whole_text(path));
  const auto json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_array())
    return Status::errorf("{}: expected a JSON array of token ids", path);
  std::vector<int32_t> tokens;
  for (const auto& item : json) {
    if (!item.is_number_integer() || item.get<int64_t>() < 0 || item.get<int64_t>() > INT32_MAX)
      return Status::errorf("{}: token ids must be non-negative integers, found {}", path,
                            item.dump());
    tokens.push_back(item.get<int32_t>());
  }
  if (tokens.empty()) return Status::errorf("{}: no tokens", path);
  return tokens;
}

struct LogitsFlags {
  SessionFlags session;
  std::string tokens_path, out_path;
  bool force = false;
};

int run_logits(LogitsFlags flags) {
  CommandInputs inputs;
  inputs.add_session(flags.session.options).add_file("the token file", flags.tokens_path);
  if (const Status status = inputs.check_outputs({flags.out_path}, flags.force); !status.ok())
    return report_failure(status);
  const auto tokens = read_token_file(flags.tokens_path);
  if (!tokens.ok()) return report_failure(tokens.status());
  if (const Status status = resolve_session_flags(flags.session); !status.ok())
    return report_failure(status);
  SessionOptions& options = flags.session.options;
  options.teacher_forced = true;
  if (options.n_ctx == 0) options.n_ctx = int64_t(tokens.value().size());
  const auto session = Session::open(options);
  if (!session.ok()) return report_failure(session.status());
  if (const Status fits =
          session.value()->check_fits_context(int64_t(tokens.value().size()), flags.tokens_path);
      !fits.ok())
    return report_failure(fits);
  std::vector<float> logits;
  const Status fed = session.value()->feed_teacher_forced(tokens.value(), logits);
  if (!fed.ok()) return report_failure(fed);
  const Status written = write_file_atomically(
      flags.out_path,
      {reinterpret_cast<const uint8_t*>(logits.data()), logits.size() * sizeof(float)});
  if (!written.ok()) return report_failure(written);
  std::fprintf(stderr, "wrote %zu x %lld logits to %s\n", tokens.value().size(),
               static_cast<long long>(session.value()->engine().n_vocab()), flags.out_path.c_str());
  return 0;
}

}  // namespace

void add_logits_command(CLI::App& app, Action& action) {
  auto* command = app.add_subcommand("logits", "teacher-forced logits of a token sequence");
  auto flags = std::make_shared<LogitsFlags>();
  add_session_flags(command, flags->session);
  command->get_option("--ctx")->default_str("the number of tokens");
  command->add_option("--tokens", flags->tokens_path, "JSON array of token ids (-: standard input)")
      ->required();
  command->add_option("-o,--out", flags->out_path, "output file: float32 [n_tokens][n_vocab]")
      ->required();
  command->add_flag("--force", flags->force, "replace an existing --out file (never an input)");
  command->callback([&action, flags] { action = [flags] { return run_logits(*flags); }; });
}

}  // namespace strata::tools
