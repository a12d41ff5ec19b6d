// strata chat -m MODEL: an interactive conversation in the model's chat format. Each user
// line is one turn; the reply streams as it is generated. Every turn formats the whole
// conversation; the session reuses the cached prefix, so only the new turn is computed. When
// the conversation outgrows the context, its oldest exchanges are dropped. An empty line or
// end of input ends the chat.
#include <strata/session.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <string>

#include "base/interrupt.h"
#include "tools/command.h"
#include "tools/generation_summary.h"
#include "tools/input_lines.h"
#include "tools/output_files.h"
#include "tools/session_flags.h"

namespace strata::tools {
namespace {

struct ChatFlags {
  SessionFlags session;
  GenerateOptions generate;
  std::string system_prompt;
};

// The conversation's tokens, its oldest exchanges dropped (the system message stays) until a
// reply has `room` tokens left in the context; what was dropped is said on stderr.
Result<std::vector<int32_t>> fitted_prompt(const Session& session,
                                           std::vector<ChatMessage>& conversation, int64_t room) {
  const size_t first = !conversation.empty() && conversation[0].role == "system" ? 1 : 0;
  STRATA_ASSIGN_OR_RETURN(std::vector<int32_t> prompt, session.engine().chat_prompt(conversation));
  int dropped = 0;
  // Messages alternate user, assistant, ..., user: dropping two keeps a user message first.
  while (int64_t(prompt.size()) + room > session.n_ctx() && conversation.size() - first > 2) {
    conversation.erase(conversation.begin() + ptrdiff_t(first),
                       conversation.begin() + ptrdiff_t(first) + 2);
    ++dropped;
    STRATA_ASSIGN_OR_RETURN(prompt, session.engine().chat_prompt(conversation));
  }
  if (dropped > 0)
    std::fprintf(stderr,
                 "note: the conversation outgrew the context (%lld tokens; --ctx): its %d oldest "
                 "exchange%s dropped\n",
                 static_cast<long long>(session.n_ctx()), dropped,
                 dropped == 1 ? " was" : "s were");
  return prompt;
}

// One reply to the conversation's last message, streamed to stdout; Ctrl-C or SIGTERM stops it
// between tokens (or the prompt between its chunks). What was generated is added to the
// conversation. Returns the tokens generated.
Result<int64_t> reply(Session& session, std::vector<ChatMessage>& conversation,
                      const GenerateOptions& options, int64_t reply_room) {
  const auto prompt = fitted_prompt(session, conversation, reply_room);
  if (!prompt.ok()) return prompt.status();
  if (int64_t(prompt.value().size()) >= session.n_ctx()) {
    std::fprintf(stderr, "note: that message takes %lld tokens of a %lld-token context (--ctx)\n",
                 static_cast<long long>(prompt.value().size()),
                 static_cast<long long>(session.n_ctx()));
    conversation.pop_back();
    return int64_t(0);
  }
  std::string text;
  const auto generated =
      session.generate(prompt.value(), options, [&text](int32_t, std::string_view piece) {
        text += piece;
        std::fwrite(piece.data(), 1, piece.size(), stdout);
        std::fflush(stdout);
        return !interrupted();
      });
  std::fputc('\n', stdout);
  std::fflush(stdout);
  if (!generated.ok() && !interrupted()) return generated.status();
  const int64_t n_generated = generated.ok() ? int64_t(generated.value().size()) : 0;
  if (!interrupted() && n_generated < options.max_tokens && session.n_past() >= session.n_ctx())
    std::fputs("note: the reply stopped at the end of the context (--ctx)\n", stderr);
  conversation.push_back({"assistant", text});
  return n_generated;
}

int chat(const ChatFlags& flags) {
  const Status warm_file =
      CommandInputs().add_session(flags.session.options).check_outputs({}, false);
  if (!warm_file.ok()) return report_failure(warm_file);
  ChatFlags resolved = flags;
  if (const Status status = resolve_session_flags(resolved.session); !status.ok())
    return report_failure(status);
  const auto opened = Session::open(resolved.session.options);
  if (!opened.ok()) return report_failure(opened.status());
  Session& session = *opened.value();
  // Room kept for a reply when old turns must go; a longer reply stops at the context's end.
  const int64_t reply_room = std::min<int64_t>(flags.generate.max_tokens, session.n_ctx() / 2);
  std::vector<ChatMessage> conversation;
  if (!flags.system_prompt.empty()) conversation.push_back({"system", flags.system_prompt});
  std::fputs("empty line, Ctrl-D or Ctrl-C to quit; Ctrl-C during a reply stops it\n", stderr);
  InputLines input;
  std::string line;
  int64_t generated = 0;
  for (;;) {
    std::fputs("> ", stderr);
    const auto next = input.next(line);
    if (!next.ok()) return report_failure(next.status());
    // Ended at the prompt without a newline typed: the cursor follows "> " (and a "^C").
    if (next.value() != InputLines::Next::kLine) std::fputc('\n', stderr);
    if (next.value() != InputLines::Next::kLine || line.empty()) break;
    conversation.push_back({"user", line});
    const auto replied = reply(session, conversation, flags.generate, reply_room);
    if (!replied.ok()) return report_failure(replied.status());
    generated += replied.value();
    if (interrupt_signal() == SIGTERM) break;
    clear_interrupt();  // Ctrl-C stopped the reply, not the chat
  }
  const bool terminated = interrupt_signal() == SIGTERM;
  if (!terminated) clear_interrupt();  // Ctrl-C at the prompt is a way to leave
  // Every chat turn adds several tokens (its turn markers), so each one's new part is a prefill.
  const SessionOptions& options = resolved.session.options;
  print_generation_summary(session, session.stats().prefill_tokens, generated,
                           streams_experts(options));
  if (!options.warm_path.empty()) {
    const Status saved = session.engine().save_expert_usage();
    if (!saved.ok()) return report_failure(saved);
  }
  if (terminated) return report_failure(interrupted_error());
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
