// The tokenizer against outputs of independent implementations (tests/golden, produced by
// llama.cpp): its own test vectors for the Qwen2 pre-tokenizer, the ids it produced for the
// golden sequences, its detokenized greedy outputs and EOG flags; and the Qwen3 token counts
// recorded with the evaluation text in ../shared/eval.
#include "gguf/gguf_file.h"
#include "runtime/tokenizer.h"
#include "runtime/unicode_bytes.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

namespace strata::runtime {
namespace {

using Clock = std::chrono::steady_clock;

std::string source_path(std::string_view relative) {
  return std::string(STRATA_SOURCE_DIR) + "/" + std::string(relative);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

nlohmann::json read_json(std::string_view relative) {
  return nlohmann::json::parse(read_file(source_path(relative)));
}

std::string from_hex(std::string_view hex) {
  std::string bytes;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    bytes.push_back(char(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  }
  return bytes;
}

Tokenizer load_tokenizer(std::string_view relative) {
  auto file = gguf::GgufFile::open(source_path(relative));
  EXPECT_TRUE(file.ok()) << file.status().message();
  auto tokenizer = Tokenizer::from_gguf(**file);
  EXPECT_TRUE(tokenizer.ok()) << tokenizer.status().message();
  return std::move(tokenizer).value();
}

const Tokenizer& qwen3() {
  static const Tokenizer* tokenizer =
      new Tokenizer(load_tokenizer("tests/golden/tokenizer/qwen3-vocab.gguf"));
  return *tokenizer;
}

// The eval documents of one domain: (text, token count), or empty where ../shared is absent.
std::vector<std::pair<std::string, size_t>> eval_documents(std::string_view domain) {
  const std::string path = source_path(fmt::format("../shared/eval/{}.jsonl", domain));
  std::vector<std::pair<std::string, size_t>> documents;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    const auto document = nlohmann::json::parse(line);
    documents.emplace_back(document["text"], document["n_tokens_qwen3"]);
  }
  return documents;
}

TEST(TokenizerGolden, Qwen3VocabularyLoadsWellUnderASecond) {
  const auto start = Clock::now();
  const Tokenizer tokenizer = load_tokenizer("tests/golden/tokenizer/qwen3-vocab.gguf");
  const double load_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  std::printf("qwen3 vocabulary (151,669 tokens, 151,387 merges): open + index %.1f ms\n", load_ms);
  RecordProperty("load_ms", std::to_string(load_ms));
  EXPECT_LT(load_ms, 1000.0);

  EXPECT_EQ(tokenizer.token_count(), 151669);
  EXPECT_EQ(tokenizer.bos_id(), 151643);
  EXPECT_EQ(tokenizer.eos_id(), 151645);
  EXPECT_FALSE(tokenizer.add_bos());
  EXPECT_TRUE(tokenizer.chat_template().starts_with("{%- if tools %}"));
  // llama.cpp's EOG set for Qwen vocabularies: <|endoftext|>, <|im_end|>, <|fim_pad|>,
  // <|repo_name|>, <|file_sep|>.
  EXPECT_EQ(tokenizer.vocab().eog_ids(),
            (std::vector<int32_t>{151643, 151645, 151662, 151663, 151664}));
}

// llama.cpp's test-tokenizer-0 reads inputs separated by "\n__ggml_vocab_test__\n" (the file
// ends with one too) and one line of space-separated ids per input, and tokenizes with
// add_special = false, parse_special = false.
TEST(TokenizerGolden, LlamaCppQwen2Vectors) {
  const std::string inputs =
      read_file(source_path("tests/golden/tokenizer/ggml-vocab-qwen2.gguf.inp"));
  const std::string outputs =
      read_file(source_path("tests/golden/tokenizer/ggml-vocab-qwen2.gguf.out"));
  const std::string separator = "\n__ggml_vocab_test__\n";
  std::vector<std::string> texts;
  for (size_t pos = 0; pos < inputs.size();) {
    const size_t next = inputs.find(separator, pos);
    texts.push_back(inputs.substr(pos, next - pos));
    pos = next == std::string::npos ? inputs.size() : next + separator.size();
  }
  std::vector<std::vector<int32_t>> expected;
  std::istringstream lines(outputs);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    expected.emplace_back();
    for (int32_t id; fields >> id;) expected.back().push_back(id);
  }
  ASSERT_EQ(texts.size(), 46u);
  ASSERT_EQ(expected.size(), texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    EXPECT_EQ(qwen3().encode(texts[i], false), expected[i]) << "vector " << i << ": " << texts[i];
    EXPECT_EQ(qwen3().decode(expected[i]).value(), texts[i]) << "vector " << i;
  }
}

// The README: seq16_en is the first 16 llama.cpp tokens of "The quick brown fox j...", and
// seq200_en the first 200 of a paragraph; re-encoding their text must give the same ids.
TEST(TokenizerGolden, SyntheticSequences) {
  const Tokenizer tokenizer =
      load_tokenizer("tests/golden/synthetic/models/tiny-qwen3moe-f32.gguf");
  EXPECT_EQ(tokenizer.token_count(), 768);
  EXPECT_EQ(tokenizer.vocab().eog_ids(), (std::vector<int32_t>{765, 767}));
  const auto sequences = read_json("tests/golden/synthetic/sequences.json");
  const std::vector<int32_t> seq16 = sequences["seq16_en"]["ids"];
  EXPECT_EQ(tokenizer.encode("The quick brown fox j", false), seq16);
  for (const char* name : {"seq16_en", "seq200_en"}) {
    const std::vector<int32_t> ids = sequences[name]["ids"];
    EXPECT_EQ(tokenizer.encode(tokenizer.decode(ids).value(), false), ids) << name;
  }
}

// Every greedy continuation: llama.cpp's detokenized bytes (special tokens rendered, as in
// tiny-qwen3moe-q4_0's <|im_start|>) and its EOG flags.
TEST(TokenizerGolden, SyntheticGreedyDecode) {
  const Tokenizer tokenizer =
      load_tokenizer("tests/golden/synthetic/models/tiny-qwen3moe-f32.gguf");
  int n_files = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(source_path("tests/golden/synthetic/greedy"))) {
    const auto greedy = nlohmann::json::parse(read_file(entry.path()));
    const std::vector<int32_t> ids = greedy["generated"];
    const std::vector<bool> is_eog = greedy["is_eog"];
    EXPECT_EQ(tokenizer.decode(ids).value(), from_hex(greedy["text_hex"].get<std::string>()))
        << entry.path();
    for (size_t i = 0; i < ids.size(); ++i) EXPECT_EQ(tokenizer.is_eog(ids[i]), is_eog[i]);
    ++n_files;
  }
  EXPECT_EQ(n_files, 11);
}

// The trained model's 16k vocabulary: the greedy continuation decodes to llama.cpp's bytes, and
// the held-out windows (code, ChatML chat with special tokens, JSON) re-encode to their ids.
TEST(TokenizerGolden, TrainedModel) {
  const Tokenizer tokenizer = load_tokenizer("models/strata-tiny-moe-q4_0.gguf");
  EXPECT_EQ(tokenizer.token_count(), 16384);
  EXPECT_EQ(tokenizer.vocab().eog_ids(), (std::vector<int32_t>{16377, 16379}));
  const auto greedy = read_json("tests/golden/trained/strata-tiny-moe-q4_0.dev_code.greedy32.json");
  const std::vector<int32_t> generated = greedy["generated"];
  EXPECT_EQ(tokenizer.decode(generated).value(), from_hex(greedy["text_hex"].get<std::string>()));
  const std::vector<int32_t> prompt = greedy["prompt"];
  EXPECT_EQ(tokenizer.encode(tokenizer.decode(prompt).value(), true), prompt);
  const auto sequences = read_json("tests/golden/trained/sequences.json");
  for (const auto& [name, value] : sequences.items()) {
    const std::vector<int32_t> ids = value;
    EXPECT_EQ(tokenizer.encode(tokenizer.decode(ids).value(), true), ids) << name;
  }
}

// llama.cpp replaces each byte that starts no valid sequence with U+FFFD before splitting, so
// the tokens are those of the repaired text, and decoding gives the repaired text back.
TEST(TokenizerGolden, InvalidUtf8IsRepairedLikeLlamaCpp) {
  EXPECT_EQ(qwen3().encode("\xFF", false), qwen3().encode("\uFFFD", false));
  EXPECT_EQ(qwen3().encode("ab\xE2\x82", false), qwen3().encode("ab\uFFFD\uFFFD", false));
  EXPECT_EQ(qwen3().encode("a\xC0\x80"
                           "b",
                           false),
            qwen3().encode(std::string("a\0b", 3), false));
  std::mt19937 rng(5);
  for (int trial = 0; trial < 3000; ++trial) {
    std::string bytes(rng() % 40, '\0');
    for (char& byte : bytes) byte = char(rng() % 4 == 0 ? rng() : 0x20 + rng() % 0x60);
    const std::vector<int32_t> ids = qwen3().encode(bytes, false);
    ASSERT_EQ(qwen3().decode(ids).value(), repair_utf8(bytes)) << testing::PrintToString(bytes);
  }
}

// Long texts go through a per-call word cache; short ones do not. Sentences joined by spaces
// split into the same words whole or one by one, so both paths must agree.
TEST(TokenizerGolden, WordCacheAgreesWithUncachedEncoding) {
  const char* sentences[] = {"The cat sat on the mat.", "Le chat était là.", "猫がいる。",
                             "x = f(y) + 42;", "The cat sat on the mat again."};
  std::string text;
  std::vector<int32_t> expected;
  for (int i = 0; i < 200; ++i) {
    const std::string sentence = std::string(i == 0 ? "" : " ") + sentences[i % 5];
    text += sentence;
    const std::vector<int32_t> ids = qwen3().encode(sentence, false);
    expected.insert(expected.end(), ids.begin(), ids.end());
  }
  EXPECT_EQ(qwen3().encode(text, false), expected);
}

TEST(TokenizerGolden, ConcurrentEncodesAgree) {
  std::string text;
  for (const auto& [document, n_tokens] : eval_documents("code")) text += document;
  if (text.empty()) text = std::string(100000, 'x');
  const std::vector<int32_t> expected = qwen3().encode(text, true);
  std::vector<std::vector<int32_t>> results(4);
  std::vector<std::thread> threads;
  for (auto& result : results) {
    threads.emplace_back([&] { result = qwen3().encode(text, true); });
  }
  for (auto& thread : threads) thread.join();
  for (const auto& result : results) EXPECT_EQ(result, expected);
}

TEST(TokenizerGolden, EvalTokenCounts) {
  size_t n_documents = 0;
  for (const char* domain : {"en_prose", "code", "json", "ja", "chat", "math"}) {
    for (const auto& [text, n_tokens] : eval_documents(domain)) {
      EXPECT_EQ(qwen3().encode(text, true).size(), n_tokens)
          << domain << ": " << text.substr(0, 80);
      ++n_documents;
    }
  }
  if (n_documents == 0) GTEST_SKIP() << "no ../shared/eval next to the source tree";
  EXPECT_EQ(n_documents, 336u);
}

// Throughput on English prose, for the record (the assertion only catches a collapse).
TEST(TokenizerGolden, EncodeThroughput) {
  std::string corpus;
  for (const auto& [text, n_tokens] : eval_documents("en_prose")) corpus += text;
  if (corpus.empty()) GTEST_SKIP() << "no ../shared/eval next to the source tree";
  double best_seconds = 1e9;
  size_t n_tokens = 0;
  for (int run = 0; run < 5; ++run) {
    const auto start = Clock::now();
    n_tokens = qwen3().encode(corpus, true).size();
    best_seconds =
        std::min(best_seconds, std::chrono::duration<double>(Clock::now() - start).count());
  }
  const double tokens_per_second = double(n_tokens) / best_seconds;
  std::printf(
      "encode en_prose: %zu bytes -> %zu tokens in %.1f ms (best of 5): %.2f M tokens/s, "
      "%.1f MB/s\n",
      corpus.size(), n_tokens, best_seconds * 1e3, tokens_per_second / 1e6,
      double(corpus.size()) / best_seconds / 1e6);
  RecordProperty("tokens_per_second", std::to_string(tokens_per_second));
  EXPECT_GT(tokens_per_second, 1e5);
}

}  // namespace
}  // namespace strata::runtime
