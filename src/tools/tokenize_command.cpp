// strata tokenize -m MODEL (-p TEXT | -f FILE): prints the token ids as a JSON array.
// Works on vocab-only GGUF files.
#include <strata/text_tokenizer.h>

#include <cstdio>

#include "base/whole_file.h"
#include "tools/command.h"

namespace strata::tools {
namespace {

struct TokenizeFlags {
  std::string model, prompt, file;
  bool no_special = false;
};

int tokenize(const TokenizeFlags& flags) {
  std::string text = flags.prompt;
  if (!flags.file.empty()) {
    auto read = read_whole_text(flags.file);
    if (!read.ok()) return report_failure(read.status());
    text = std::move(read).value();
  }
  const auto tokenizer = TextTokenizer::open(flags.model);
  if (!tokenizer.ok()) return report_failure(tokenizer.status());
  const auto ids = tokenizer.value()->encode(text, !flags.no_special);
  std::string out = "[";
  for (size_t i = 0; i < ids.size(); ++i) out += (i ? ", " : "") + std::to_string(ids[i]);
  out += "]\n";
  std::fputs(out.c_str(), stdout);
  return 0;
}

}  // namespace

void add_tokenize_command(CLI::App& app, Action& action) {
  auto* command = app.add_subcommand("tokenize", "print the token ids of a text as JSON");
  auto flags = std::make_shared<TokenizeFlags>();
  command->add_option("-m,--model", flags->model, "GGUF model or vocab-only file")->required();
  auto* prompt = command->add_option("-p,--prompt", flags->prompt, "text");
  auto* file = command->add_option("-f,--file", flags->file,
                                   "read the text from a file (-: standard input)");
  prompt->excludes(file);
  command->add_flag("--no-special", flags->no_special, "treat special-token text as plain text");
  command->callback([&action, flags, prompt, file] {
    action = [flags, prompt, file] {
      if (prompt->count() == 0 && file->count() == 0)
        return report_failure(Status::error("tokenize: give the text with -p TEXT or -f FILE"));
      return tokenize(*flags);
    };
  });
}

}  // namespace strata::tools
