// strata chat -m MODEL: an interactive conversation in the model's chat format. Each user
// line is one turn; the reply streams as it is generated. Every turn formats the whole
// conversation; the session reuses the cached prefix, so only the new turn is computed.
// An empty line or end of input ends the chat.
#include <strata/session.h>

#include <cstdio>
#include <iostream>
#include <string>

#include "tools/command.h"
#include "tools/session_flags.h"

namespace strata::tools {
namespace {

struct ChatFlags {
  SessionFlags session;
  GenerateOptions generate;
  std::string system_prompt;
};

int chat(const ChatFlags& flags) {
  ChatFlags resolved = flags;
  if (const Status status = resolve_session_flags(resolved.session); !status.ok())
    return report_failure(status);
  const auto opened = Session::open(resolved.session.options);
  if (!opened.ok()) return report_failure(opened.status());
  Session& session = *opened.value();
  std::vector<ChatMessage> conversation;
  if (!flags.system_prompt.empty()) conversation.push_back({"system", flags.system_prompt});
  std::string line;
  for (;;) {
    std::fputs("> ", stderr);
    if (!std::getline(std::cin, line) || line.empty()) break;
    conversation.push_back({"user", line});
    const auto prompt = session.chat_prompt(conversation);
    if (!prompt.ok()) return report_failure(prompt.status());
    std::string reply;
    const auto generated =
        session.generate(prompt.value(), flags.generate, [&reply](int32_t, std::string_view piece) {
          reply += piece;
          std::fwrite(piece.data(), 1, piece.size(), stdout);
          std::fflush(stdout);
        });
    std::fputc('\n', stdout);
    if (!generated.ok()) return report_failure(generated.status());
    conversation.push_back({"assistant", reply});
  }
  if (!resolved.session.options.warm_path.empty()) {
    const Status saved = session.save_expert_usage();
    if (!saved.ok()) return report_failure(saved);
  }
  return 0;
}

}  // namespace

void add_chat_command(CLI::App& app, Action& action) {
  auto* command = app.add_subcommand("chat", "interactive chat in the model's chat format");
  auto flags = std::make_shared<ChatFlags>();
  add_session_flags(command, flags->session);
  add_sampling_flags(command, flags->generate);
  flags->generate.max_tokens = 512;
  command->add_option("--system", flags->system_prompt, "system message");
  command->callback([&action, flags] { action = [flags] { return chat(*flags); }; });
}

}  // namespace strata::tools
