// The requests of the OpenAI API that `strata serve` answers, read from their JSON bodies.
// Whatever a client sends is either a request within the server's limits or one error line
// (the message of an OpenAI-style 400 error, naming the field): never an exception or a crash.
// Fields the engine has no use for (presence_penalty, logprobs, user, ...) are ignored, as
// OpenAI clients send them by default.
//
// Thread-safety: pure functions of their arguments.
#pragma once

#include <strata/engine.h>
#include <strata/status.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace strata::server {

// What the server accepts at most; --max-tokens and the context bound the rest.
struct RequestLimits {
  size_t max_body_bytes = size_t(4) << 20;
  int max_tokens = 4096;  // a request's max_tokens; also its default
  size_t max_messages = 512;
  size_t max_stop_sequences = 4;
  size_t max_stop_bytes = 256;  // each
};

// How a reply is sampled and when it ends.
struct Sampling {
  int max_tokens = 0;
  float temperature = 1.0f;  // OpenAI's default
  float top_p = 1.0f;
  std::optional<uint64_t> seed;  // none: the server draws one
  std::vector<std::string> stop;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage: a last chunk with the usage
};

struct ChatRequest {
  std::string model;
  std::vector<ChatMessage> messages;
  Sampling sampling;
};

struct CompletionRequest {
  std::string model;
  std::string prompt;
  Sampling sampling;
};

Result<ChatRequest> parse_chat_request(std::string_view body, const RequestLimits& limits);
Result<CompletionRequest> parse_completion_request(std::string_view body,
                                                   const RequestLimits& limits);

}  // namespace strata::server
