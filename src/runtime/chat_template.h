// ChatML prompt formatting, the template of Qwen2/Qwen3 models (no Jinja interpreter: the
// model's own template, Tokenizer::chat_template(), is kept for display only). A conversation is
//   <|im_start|>{role}\n{content}<|im_end|>\n      for each message, then, to ask for a reply,
//   <|im_start|>assistant\n
//
// Thread-safety: pure functions of their arguments.
#pragma once

#include <strata/status.h>

#include "runtime/tokenizer.h"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace strata::runtime {

struct ChatMessage {
  std::string role;  // "system", "user", "assistant", "tool"
  std::string content;
};

// The prompt as text, to be encoded with parse_special = true (as llama.cpp does), which turns
// the markers into their ids, and also any special-token text inside the messages: reasoning
// (<think>) and tool calls in earlier assistant turns must stay special. Fails, naming the
// model file, unless the vocabulary has <|im_start|> and <|im_end|>.
Result<std::string> format_chatml(const Tokenizer& tokenizer, std::span<const ChatMessage> messages,
                                  bool add_generation_prompt);

// The same prompt as token ids: tokenizer.encode(format_chatml(...), true). No BOS is added.
Result<std::vector<int32_t>> encode_chatml(const Tokenizer& tokenizer,
                                           std::span<const ChatMessage> messages,
                                           bool add_generation_prompt);

}  // namespace strata::runtime
