#include "server/api_request.h"

#include <gtest/gtest.h>

namespace strata::server {
namespace {

const RequestLimits kLimits;

std::string chat_error(const std::string& body) {
  const auto parsed = parse_chat_request(body, kLimits);
  return parsed.ok() ? std::string("(accepted)") : parsed.status().message();
}

TEST(ChatRequest, ReadsWhatOpenAIClientsSend) {
  const auto parsed = parse_chat_request(
      R"({"model": "m", "messages": [{"role": "developer", "content": "Be brief."},
          {"role": "user", "content": [{"type": "text", "text": "Hi "}, {"type": "text", "text": "there"}]},
          {"role": "assistant", "content": null, "tool_calls": []},
          {"role": "tool", "content": "42", "tool_call_id": "x"}],
          "max_tokens": 12, "temperature": 0, "top_p": 0.5, "seed": -3, "stop": ["\n"],
          "n": 1, "stream": true, "stream_options": {"include_usage": true},
          "presence_penalty": 0, "user": "someone", "logprobs": null})",
      kLimits);
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  const ChatRequest& r = parsed.value();
  EXPECT_EQ(r.model, "m");
  ASSERT_EQ(r.messages.size(), 4u);
  EXPECT_EQ(r.messages[0].role, "system");
  EXPECT_EQ(r.messages[1].content, "Hi there");
  EXPECT_EQ(r.messages[2].content, "");
  EXPECT_EQ(r.messages[3].role, "tool");
  EXPECT_EQ(r.sampling.max_tokens, 12);
  EXPECT_EQ(r.sampling.temperature, 0.0f);
  EXPECT_EQ(r.sampling.top_p, 0.5f);
  EXPECT_EQ(r.sampling.seed, uint64_t(-3));
  EXPECT_EQ(r.sampling.stop, std::vector<std::string>{"\n"});
  EXPECT_TRUE(r.sampling.stream);
  EXPECT_TRUE(r.sampling.include_usage);
}

TEST(ChatRequest, DefaultsWhereTheRequestIsSilent) {
  const auto parsed = parse_chat_request(R"({"messages": [{"role": "user", "content": "x"}],
                                             "max_tokens": null, "stop": "END"})",
                                         kLimits);
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  EXPECT_EQ(parsed.value().sampling.max_tokens, kLimits.max_tokens);
  EXPECT_EQ(parsed.value().sampling.temperature, 1.0f);
  EXPECT_FALSE(parsed.value().sampling.seed.has_value());
  EXPECT_EQ(parsed.value().sampling.stop, std::vector<std::string>{"END"});
  EXPECT_FALSE(parsed.value().sampling.stream);
}

TEST(ChatRequest, EveryMalformedFieldIsOneMessageNamingIt) {
  const std::pair<const char*, const char*> cases[] = {
      {"", "not valid JSON"},
      {"{\"messages\": [", "not valid JSON"},
      {"[1, 2]", "must be a JSON object"},
      {"{}", "'messages' must be a non-empty array"},
      {R"({"messages": []})", "'messages' must be a non-empty array"},
      {R"({"messages": "hi"})", "'messages' must be a non-empty array"},
      {R"({"messages": [3]})", "messages[0] must be an object"},
      {R"({"messages": [{"content": "x"}]})", "messages[0].role must be a string"},
      {R"({"messages": [{"role": "robot", "content": "x"}]})", "messages[0].role must be"},
      {R"({"messages": [{"role": "user"}]})", "messages[0].content is missing"},
      {R"({"messages": [{"role": "user", "content": 5}]})", "messages[0].content must be"},
      {R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})",
       "only parts of type 'text'"},
      {R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": "9"})",
       "'max_tokens' must be an integer"},
      {R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": 0})",
       "'max_tokens' must be from 1 to 4096"},
      {R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": 1e30})",
       "'max_tokens' must be an integer"},
      {R"({"messages": [{"role": "user", "content": "x"}], "temperature": 3})",
       "'temperature' must be at least 0 and at most 2"},
      {R"({"messages": [{"role": "user", "content": "x"}], "temperature": "hot"})",
       "'temperature' must be a number"},
      {R"({"messages": [{"role": "user", "content": "x"}], "top_p": 0})",
       "'top_p' must be above 0"},
      {R"({"messages": [{"role": "user", "content": "x"}], "seed": 1.5})",
       "'seed' must be an integer"},
      {R"({"messages": [{"role": "user", "content": "x"}], "n": 2})", "'n' must be 1"},
      {R"({"messages": [{"role": "user", "content": "x"}], "stop": [1]})",
       "'stop' must be a string or an array"},
      {R"({"messages": [{"role": "user", "content": "x"}], "stop": ["a","b","c","d","e"]})",
       "'stop' holds 5 sequences"},
      {R"({"messages": [{"role": "user", "content": "x"}], "stop": ""})", "must not be empty"},
      {R"({"messages": [{"role": "user", "content": "x"}], "stream": "yes"})",
       "'stream' must be true or false"},
      {R"({"messages": [{"role": "user", "content": "x"}], "stream_options": 1})",
       "'stream_options' must be an object"},
      {R"({"messages": [{"role": "user", "content": "x"}], "model": 7})",
       "'model' must be a string"},
  };
  for (const auto& [body, expected] : cases)
    EXPECT_NE(chat_error(body).find(expected), std::string::npos)
        << body << " -> " << chat_error(body);
}

TEST(ChatRequest, LimitsAreEnforced) {
  RequestLimits small;
  small.max_body_bytes = 64;
  small.max_messages = 2;
  const auto too_long = parse_chat_request(
      std::string(65, ' ') + R"({"messages": [{"role": "user", "content": "x"}]})", small);
  ASSERT_FALSE(too_long.ok());
  EXPECT_NE(too_long.status().message().find("at most 64"), std::string::npos);
  small.max_body_bytes = 1 << 20;
  const auto too_many = parse_chat_request(
      R"({"messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"},
                       {"role": "user", "content": "c"}]})",
      small);
  ASSERT_FALSE(too_many.ok());
  EXPECT_NE(too_many.status().message().find("at most 2"), std::string::npos);
}

TEST(ChatRequest, DeepNestingIsRefusedWithoutACrash) {
  const std::string deep =
      "{\"messages\": " + std::string(200000, '[') + std::string(200000, ']') + "}";
  EXPECT_EQ(chat_error(deep), "messages[0] must be an object");
}

TEST(CompletionRequest, TakesOnePromptString) {
  const auto parsed =
      parse_completion_request(R"({"prompt": ["Once upon"], "max_tokens": 3})", kLimits);
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  EXPECT_EQ(parsed.value().prompt, "Once upon");
  for (const char* body : {R"({"prompt": ["a", "b"]})", R"({"prompt": [1, 2]})",
                           R"({"prompt": ""})", R"({"max_tokens": 3})"}) {
    const auto refused = parse_completion_request(body, kLimits);
    ASSERT_FALSE(refused.ok()) << body;
    EXPECT_NE(refused.status().message().find("'prompt' must be"), std::string::npos);
  }
}

}  // namespace
}  // namespace strata::server
