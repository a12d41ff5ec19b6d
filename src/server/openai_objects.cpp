#include "server/openai_objects.h"

namespace strata::server {

using nlohmann::json;

namespace {

std::string dumped(const json& value) {
  // Text a model generates is valid UTF-8 (Utf8Stream), but replace, never throw.
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

json completion_base(const ReplyHeader& header, const char* object) {
  return {{"id", header.id},
          {"object", object},
          {"created", header.created},
          {"model", header.model},
          {"system_fingerprint", nullptr}};
}

json finish_value(const std::optional<std::string>& finish) {
  return finish ? json(*finish) : json(nullptr);
}

}  // namespace

std::string error_body(std::string_view message, std::string_view type, std::string_view code) {
  return dumped({{"error",
                  {{"message", message},
                   {"type", type},
                   {"param", nullptr},
                   {"code", code.empty() ? json(nullptr) : json(code)}}}});
}

json usage_object(const GenerationOutcome& outcome) {
  return {{"prompt_tokens", outcome.prompt_tokens},
          {"completion_tokens", outcome.completion_tokens},
          {"total_tokens", outcome.prompt_tokens + outcome.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", outcome.reused_prompt_tokens}}}};
}

std::string finish_reason(const GenerationOutcome& outcome) {
  return outcome.finish_reason == "length" ? "length" : "stop";
}

json chat_completion(const ReplyHeader& header, const std::string& text,
                     const GenerationOutcome& outcome) {
  json out = completion_base(header, "chat.completion");
  out["choices"] = json::array({{{"index", 0},
                                 {"message", {{"role", "assistant"}, {"content", text}}},
                                 {"logprobs", nullptr},
                                 {"finish_reason", finish_reason(outcome)}}});
  out["usage"] = usage_object(outcome);
  return out;
}

json chat_chunk(const ReplyHeader& header, json delta, std::optional<std::string> finish) {
  json out = completion_base(header, "chat.completion.chunk");
  out["choices"] = json::array({{{"index", 0},
                                 {"delta", std::move(delta)},
                                 {"logprobs", nullptr},
                                 {"finish_reason", finish_value(finish)}}});
  return out;
}

json text_completion(const ReplyHeader& header, const std::string& text,
                     std::optional<std::string> finish) {
  json out = completion_base(header, "text_completion");
  out["choices"] = json::array({{{"index", 0},
                                 {"text", text},
                                 {"logprobs", nullptr},
                                 {"finish_reason", finish_value(finish)}}});
  return out;
}

json usage_chunk(const ReplyHeader& header, bool chat, const GenerationOutcome& outcome) {
  json out = completion_base(header, chat ? "chat.completion.chunk" : "text_completion");
  out["choices"] = json::array();
  out["usage"] = usage_object(outcome);
  return out;
}

json model_list(const std::string& model, int64_t created, int64_t n_ctx) {
  return {{"object", "list"},
          {"data", json::array({{{"id", model},
                                 {"object", "model"},
                                 {"created", created},
                                 {"owned_by", "strata"},
                                 {"context_length", n_ctx}}})}};
}

std::string event(const json& value) { return "data: " + dumped(value) + "\n\n"; }

}  // namespace strata::server
