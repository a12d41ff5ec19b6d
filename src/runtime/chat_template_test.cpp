// ChatML formatting against conversations formatted elsewhere: the held-out chat window of the
// golden data (ids from llama.cpp) and the ChatML documents of ../shared/eval with their Qwen3
// token counts.
#include "runtime/chat_template.h"

#include "gguf/gguf_file.h"
#include "runtime/unicode_bytes.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <regex>
#include <sstream>

namespace strata::runtime {
namespace {

std::string source_path(std::string_view relative) {
  return std::string(STRATA_SOURCE_DIR) + "/" + std::string(relative);
}

Tokenizer load_tokenizer(std::string_view relative) {
  auto file = gguf::GgufFile::open(source_path(relative));
  EXPECT_TRUE(file.ok()) << file.status().message();
  auto tokenizer = Tokenizer::from_gguf(**file);
  EXPECT_TRUE(tokenizer.ok()) << tokenizer.status().message();
  return std::move(tokenizer).value();
}

const Tokenizer& trained() {
  static const Tokenizer* tokenizer =
      new Tokenizer(load_tokenizer("models/strata-tiny-moe-q4_0.gguf"));
  return *tokenizer;
}

// The messages of a ChatML text whose every turn is complete.
std::vector<ChatMessage> parse_chatml(const std::string& text) {
  static const std::regex turn(R"(<\|im_start\|>(\w+)\n([\s\S]*?)<\|im_end\|>\n)");
  std::vector<ChatMessage> messages;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), turn); it != std::sregex_iterator();
       ++it) {
    messages.push_back({(*it)[1], (*it)[2]});
  }
  return messages;
}

TEST(ChatTemplate, FormatsChatML) {
  const std::vector<ChatMessage> messages = {{"system", "Be brief."}, {"user", "Hi!"}};
  EXPECT_EQ(format_chatml(trained(), messages, true).value(),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi!<|im_end|>\n"
            "<|im_start|>assistant\n");
  EXPECT_EQ(format_chatml(trained(), messages, false).value(),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi!<|im_end|>\n");
  EXPECT_EQ(format_chatml(trained(), {}, true).value(), "<|im_start|>assistant\n");
}

// Special-token text in earlier turns stays special: the trained model's <think> is CONTROL.
TEST(ChatTemplate, ReasoningInHistoryStaysSpecial) {
  const std::vector<ChatMessage> messages = {{"assistant", "<think>\nhm\n</think>\n\nSure."}};
  const std::vector<int32_t> ids = encode_chatml(trained(), messages, false).value();
  const int32_t think = trained().vocab().find("<think>");
  ASSERT_NE(think, kNoToken);
  EXPECT_EQ(ids[3], think);  // <|im_start|> assistant \n <think>
  EXPECT_EQ(trained().decode(ids).value(), format_chatml(trained(), messages, false).value());
}

// The golden dev_chat window (64 llama.cpp ids of a held-out ChatML conversation, cut after
// three complete turns): our encoding of those turns is its prefix.
TEST(ChatTemplate, MatchesGoldenChatWindow) {
  std::ifstream in(source_path("tests/golden/trained/sequences.json"));
  const std::vector<int32_t> window = nlohmann::json::parse(in)["dev_chat"];
  const std::string text = trained().decode(window).value();
  const std::vector<ChatMessage> messages = parse_chatml(text);
  ASSERT_GE(messages.size(), 3u);
  const std::vector<int32_t> ids = encode_chatml(trained(), messages, false).value();
  ASSERT_LE(ids.size(), window.size());
  EXPECT_EQ(ids, std::vector<int32_t>(window.begin(), window.begin() + ids.size()));
}

// The ChatML documents of the evaluation text end with "<|im_end|>" (no newline); formatting
// their parsed turns must give the text back, and as many Qwen3 tokens (plus the newline).
TEST(ChatTemplate, ReproducesEvalConversations) {
  const Tokenizer qwen3 = load_tokenizer("tests/golden/tokenizer/qwen3-vocab.gguf");
  std::ifstream in(source_path("../shared/eval/chat.jsonl"));
  int n_conversations = 0;
  for (std::string line; std::getline(in, line);) {
    const auto document = nlohmann::json::parse(line);
    const std::string text = document["text"];
    if (!text.starts_with("<|im_start|>")) continue;
    const std::vector<ChatMessage> messages = parse_chatml(text + "\n");
    EXPECT_EQ(format_chatml(qwen3, messages, false).value(), text + "\n");
    EXPECT_EQ(encode_chatml(qwen3, messages, false).value().size(),
              document["n_tokens_qwen3"].get<size_t>() + 1);
    ++n_conversations;
  }
  if (n_conversations == 0) GTEST_SKIP() << "no ../shared/eval next to the source tree";
  EXPECT_EQ(n_conversations, 20);
}

TEST(ChatTemplate, RefusesAVocabularyWithoutChatML) {
  VocabSpec spec;
  spec.source = "plain.gguf";
  spec.model = "gpt2";
  spec.pre = "qwen2";
  for (int byte = 0; byte < 256; ++byte) spec.tokens.emplace_back(byte_to_utf8(uint8_t(byte)));
  spec.tokens.push_back("<|im_end|>");
  const Tokenizer tokenizer = Tokenizer::from_vocab(Vocab::build(std::move(spec)).value()).value();
  const std::vector<ChatMessage> messages = {{"user", "hi"}};
  const std::string expected =
      "plain.gguf: the vocabulary has no <|im_start|> token, so it cannot take a ChatML "
      "conversation (the only chat template Strata formats)";
  EXPECT_EQ(format_chatml(tokenizer, messages, true).status().message(), expected);
  EXPECT_EQ(encode_chatml(tokenizer, messages, true).status().message(), expected);
}

}  // namespace
}  // namespace strata::runtime
