#include "runtime/chat_template.h"

namespace strata::runtime {
namespace {

constexpr std::string_view kTurnStart = "<|im_start|>";
constexpr std::string_view kTurnEnd = "<|im_end|>";
constexpr std::string_view kReplyRole = "assistant";

Status check_markers(const Vocab& vocab) {
  for (const std::string_view marker : {kTurnStart, kTurnEnd}) {
    if (vocab.find(marker) == kNoToken) {
      return Status::errorf(
          "{}: the vocabulary has no {} token, so it cannot take a ChatML "
          "conversation (the only chat template Strata formats)",
          vocab.source(), marker);
    }
  }
  return Status();
}

}  // namespace

Result<std::string> format_chatml(const Tokenizer& tokenizer, std::span<const ChatMessage> messages,
                                  bool add_generation_prompt) {
  STRATA_RETURN_IF_ERROR(check_markers(tokenizer.vocab()));
  std::string prompt;
  for (const ChatMessage& message : messages) {
    prompt += fmt::format("{}{}\n{}{}\n", kTurnStart, message.role, message.content, kTurnEnd);
  }
  if (add_generation_prompt) prompt += fmt::format("{}{}\n", kTurnStart, kReplyRole);
  return prompt;
}

Result<std::vector<int32_t>> encode_chatml(const Tokenizer& tokenizer,
                                           std::span<const ChatMessage> messages,
                                           bool add_generation_prompt) {
  STRATA_ASSIGN_OR_RETURN(const std::string prompt,
                          format_chatml(tokenizer, messages, add_generation_prompt));
  return tokenizer.encode(prompt, /*parse_special=*/true);
}

}  // namespace strata::runtime
