#include "server/api_request.h"

#include <nlohmann/json.hpp>

#include <cmath>

#include "base/json_field.h"

namespace strata::server {
namespace {

using nlohmann::json;

// The field `key` of `body`; nullptr when missing or null (clients send null for "default").
const json* optional_field(const json& body, std::string_view key) {
  const json* member = json_member(body, key);
  return member && !member->is_null() ? member : nullptr;
}

Result<json> parse_object(std::string_view body, const RequestLimits& limits) {
  if (body.size() > limits.max_body_bytes)
    return Status::errorf("the request body has {} bytes; this server takes at most {}",
                          body.size(), limits.max_body_bytes);
  json parsed = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) return Status::error("the request body is not valid JSON");
  if (!parsed.is_object()) return Status::error("the request body must be a JSON object");
  return parsed;
}

// A number field within [low, high] (open at the low end when `low_open`).
Result<std::optional<float>> number_field(const json& body, std::string_view key, double low,
                                          bool low_open, double high) {
  const json* member = optional_field(body, key);
  if (!member) return std::optional<float>();
  const std::optional<double> value = json_as<double>(*member);
  if (!value || !std::isfinite(*value)) return Status::errorf("'{}' must be a number", key);
  if (*value < low || (low_open && *value == low) || *value > high)
    return Status::errorf("'{}' must be {} {} and at most {}; got {}", key,
                          low_open ? "above" : "at least", low, high, *value);
  return std::optional<float>(float(*value));
}

Result<int> max_tokens_field(const json& body, const RequestLimits& limits) {
  for (const char* key : {"max_completion_tokens", "max_tokens"}) {
    const json* member = optional_field(body, key);
    if (!member) continue;
    const std::optional<int64_t> value = json_as<int64_t>(*member);
    if (!value) return Status::errorf("'{}' must be an integer", key);
    if (*value < 1 || *value > limits.max_tokens)
      return Status::errorf("'{}' must be from 1 to {} (this server's limit); got {}", key,
                            limits.max_tokens, *value);
    return int(*value);
  }
  return limits.max_tokens;
}

Result<std::vector<std::string>> stop_field(const json& body, const RequestLimits& limits) {
  const json* member = optional_field(body, "stop");
  std::vector<std::string> stop;
  if (!member) return stop;
  if (member->is_string()) {
    stop.push_back(member->get<std::string>());
  } else if (member->is_array()) {
    if (member->size() > limits.max_stop_sequences)
      return Status::errorf("'stop' holds {} sequences; at most {} are taken", member->size(),
                            limits.max_stop_sequences);
    for (const json& each : *member) {
      if (!each.is_string()) return Status::error("'stop' must be a string or an array of strings");
      stop.push_back(each.get<std::string>());
    }
  } else {
    return Status::error("'stop' must be a string or an array of strings");
  }
  for (const std::string& each : stop) {
    if (each.empty()) return Status::error("'stop' sequences must not be empty");
    if (each.size() > limits.max_stop_bytes)
      return Status::errorf("a 'stop' sequence has {} bytes; at most {} are taken", each.size(),
                            limits.max_stop_bytes);
  }
  return stop;
}

Result<bool> bool_field(const json& body, std::string_view key, const json* object = nullptr) {
  const json* member = optional_field(object ? *object : body, key);
  if (!member) return false;
  if (!member->is_boolean()) return Status::errorf("'{}' must be true or false", key);
  return member->get<bool>();
}

Result<Sampling> sampling_fields(const json& body, const RequestLimits& limits) {
  Sampling sampling;
  STRATA_ASSIGN_OR_RETURN(sampling.max_tokens, max_tokens_field(body, limits));
  STRATA_ASSIGN_OR_RETURN(const auto temperature, number_field(body, "temperature", 0, false, 2));
  if (temperature) sampling.temperature = *temperature;
  STRATA_ASSIGN_OR_RETURN(const auto top_p, number_field(body, "top_p", 0, true, 1));
  if (top_p) sampling.top_p = *top_p;
  if (const json* seed = optional_field(body, "seed")) {
    if (const auto value = json_as<int64_t>(*seed)) {
      sampling.seed = uint64_t(*value);
    } else if (const auto unsigned_value = json_as<uint64_t>(*seed)) {
      sampling.seed = *unsigned_value;
    } else {
      return Status::error("'seed' must be an integer");
    }
  }
  if (const json* n = optional_field(body, "n"); n && json_as<int64_t>(*n) != 1)
    return Status::error("'n' must be 1: this server generates one choice per request");
  STRATA_ASSIGN_OR_RETURN(sampling.stop, stop_field(body, limits));
  STRATA_ASSIGN_OR_RETURN(sampling.stream, bool_field(body, "stream"));
  if (const json* options = optional_field(body, "stream_options")) {
    if (!options->is_object()) return Status::error("'stream_options' must be an object");
    STRATA_ASSIGN_OR_RETURN(sampling.include_usage, bool_field(body, "include_usage", options));
  }
  return sampling;
}

Result<std::string> model_field(const json& body) {
  const json* member = optional_field(body, "model");
  if (!member) return std::string();
  if (!member->is_string()) return Status::error("'model' must be a string");
  return member->get<std::string>();
}

// A message's content: a string, or an array of text parts.
Result<std::string> message_content(const json& content, size_t index) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array())
    return Status::errorf("messages[{}].content must be a string or an array of text parts", index);
  std::string text;
  for (const json& part : content) {
    const std::optional<std::string> type = json_field<std::string>(part, "type");
    const std::optional<std::string> part_text = json_field<std::string>(part, "text");
    if (type != "text" || !part_text)
      return Status::errorf(
          "messages[{}].content: only parts of type 'text' with a string 'text' are taken", index);
    text += *part_text;
  }
  return text;
}

Result<ChatMessage> message_field(const json& message, size_t index) {
  if (!message.is_object()) return Status::errorf("messages[{}] must be an object", index);
  const std::optional<std::string> role = json_field<std::string>(message, "role");
  if (!role) return Status::errorf("messages[{}].role must be a string", index);
  ChatMessage out;
  // OpenAI's newer name for the system role.
  out.role = *role == "developer" ? "system" : *role;
  if (out.role != "system" && out.role != "user" && out.role != "assistant" && out.role != "tool")
    return Status::errorf(
        "messages[{}].role must be system, developer, user, assistant or tool; got {}", index,
        json_quoted(*role));
  const json* content = optional_field(message, "content");
  // An assistant's turn that only called tools has no content.
  if (!content) {
    if (out.role == "assistant") return out;
    return Status::errorf("messages[{}].content is missing", index);
  }
  STRATA_ASSIGN_OR_RETURN(out.content, message_content(*content, index));
  return out;
}

}  // namespace

Result<ChatRequest> parse_chat_request(std::string_view body, const RequestLimits& limits) {
  STRATA_ASSIGN_OR_RETURN(const json object, parse_object(body, limits));
  ChatRequest request;
  STRATA_ASSIGN_OR_RETURN(request.model, model_field(object));
  const json* messages = json_member(object, "messages");
  if (!messages || !messages->is_array() || messages->empty())
    return Status::error("'messages' must be a non-empty array");
  if (messages->size() > limits.max_messages)
    return Status::errorf("'messages' holds {} messages; this server takes at most {}",
                          messages->size(), limits.max_messages);
  for (size_t i = 0; i < messages->size(); ++i) {
    STRATA_ASSIGN_OR_RETURN(ChatMessage message, message_field((*messages)[i], i));
    request.messages.push_back(std::move(message));
  }
  STRATA_ASSIGN_OR_RETURN(request.sampling, sampling_fields(object, limits));
  return request;
}

Result<CompletionRequest> parse_completion_request(std::string_view body,
                                                   const RequestLimits& limits) {
  STRATA_ASSIGN_OR_RETURN(const json object, parse_object(body, limits));
  CompletionRequest request;
  STRATA_ASSIGN_OR_RETURN(request.model, model_field(object));
  const json* prompt = json_member(object, "prompt");
  if (prompt && prompt->is_array() && prompt->size() == 1) prompt = &(*prompt)[0];
  if (!prompt || !prompt->is_string() || prompt->get_ref<const std::string&>().empty())
    return Status::error("'prompt' must be a non-empty string (one prompt per request)");
  request.prompt = prompt->get<std::string>();
  STRATA_ASSIGN_OR_RETURN(request.sampling, sampling_fields(object, limits));
  return request;
}

}  // namespace strata::server
