// The JSON objects of the OpenAI API that `strata serve` sends: errors, chat completions and
// their stream chunks, text completions, usage and the model list.
//
// Thread-safety: pure functions of their arguments.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "server/scheduler.h"

namespace strata::server {

// {"error": {"message", "type", "param": null, "code"}}, as a string.
std::string error_body(std::string_view message, std::string_view type, std::string_view code = {});

// What every completion object names.
struct ReplyHeader {
  std::string id;  // "chatcmpl-..." or "cmpl-..."
  int64_t created = 0;
  std::string model;
};

nlohmann::json usage_object(const GenerationOutcome& outcome);
// The OpenAI finish_reason of an outcome ("stop" or "length").
std::string finish_reason(const GenerationOutcome& outcome);

nlohmann::json chat_completion(const ReplyHeader& header, const std::string& text,
                               const GenerationOutcome& outcome);
// A chunk of a streamed chat completion: `delta` ({"role": ...} or {"content": ...}, or empty
// with a finish reason).
nlohmann::json chat_chunk(const ReplyHeader& header, nlohmann::json delta,
                          std::optional<std::string> finish);
nlohmann::json text_completion(const ReplyHeader& header, const std::string& text,
                               std::optional<std::string> finish);
// The last chunk of a stream that asked for the usage: no choices.
nlohmann::json usage_chunk(const ReplyHeader& header, bool chat, const GenerationOutcome& outcome);

nlohmann::json model_list(const std::string& model, int64_t created, int64_t n_ctx);

// `value` as one server-sent event: "data: {...}\n\n".
std::string event(const nlohmann::json& value);

}  // namespace strata::server
