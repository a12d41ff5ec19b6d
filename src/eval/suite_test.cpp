#include "eval/suite.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>

#include "eval/eval_test_support.h"

namespace strata::eval {
namespace {

using testing::kQwen3Vocab;
using testing::kSyntheticQ8;

std::unique_ptr<TextTokenizer> tokenizer(const std::string& path = kSyntheticQ8) {
  auto opened = TextTokenizer::open(path);
  EXPECT_TRUE(opened.ok()) << opened.status().message();
  return std::move(opened).value();
}

SuiteSpec spec(const std::filesystem::path& dir, int64_t windows = 3, uint64_t seed = 1) {
  return {dir.string(), kSyntheticQ8, windows, 6, 10, seed};
}

Suite make(const SuiteSpec& s, std::vector<std::string>* notes = nullptr) {
  const auto suite = make_suite(s, *tokenizer(), [&](const std::string& line) {
    if (notes) notes->push_back(line);
  });
  EXPECT_TRUE(suite.ok()) << suite.status().message();
  return suite.ok() ? suite.value() : Suite{};
}

TEST(Suite, IsAFunctionOfFilesTokenizerAndSeed) {
  const auto dir = testing::write_eval_dir("deterministic");
  const Suite a = make(spec(dir)), b = make(spec(dir)), c = make(spec(dir, 3, 2));
  EXPECT_EQ(encode_suite(a), encode_suite(b));
  EXPECT_NE(encode_suite(a), encode_suite(c));
  ASSERT_EQ(a.windows.size(), 6u);  // 3 per domain; chat.jsonl sorts before prose.jsonl
  EXPECT_EQ(a.windows[0].id, "chat-000");
  EXPECT_EQ(a.windows[3].id, "prose-000");
  for (const SuiteWindow& w : a.windows) {
    EXPECT_EQ(w.prompt, 6);
    EXPECT_EQ(w.scored, 10);
    EXPECT_EQ(w.source, w.domain + ".jsonl");
    EXPECT_EQ(w.source_sha256.size(), 64u);
  }
}

TEST(Suite, WindowsAreSlicesOfTheirDocumentsWithoutOverlap) {
  const auto dir = testing::write_eval_dir("slices");
  const Suite suite = make(spec(dir, 5));
  const auto tok = tokenizer();
  const auto windows = load_window_tokens(suite, dir.string(), *tok);
  ASSERT_TRUE(windows.ok()) << windows.status().message();
  std::map<std::string, std::string> texts = {{"p0", testing::prose(0)},
                                              {"p1", testing::prose(1)},
                                              {"p2", testing::prose(2)},
                                              {"c0", testing::chat(0)},
                                              {"c1", testing::chat(1)}};
  std::map<std::string, std::vector<std::pair<int64_t, int64_t>>> taken;
  for (size_t i = 0; i < suite.windows.size(); ++i) {
    const SuiteWindow& w = suite.windows[i];
    const std::vector<int32_t> document = tok->encode(texts.at(w.document));
    ASSERT_LE(w.start + w.length(), int64_t(document.size()));
    EXPECT_EQ(windows.value()[i], std::vector<int32_t>(document.begin() + w.start,
                                                       document.begin() + w.start + w.length()));
    EXPECT_EQ(tokens_fnv1a64(windows.value()[i]), w.tokens_fnv1a64);
    for (const auto& [start, end] : taken[w.document])
      EXPECT_TRUE(w.start >= end || w.start + w.length() <= start) << w.id;
    taken[w.document].emplace_back(w.start, w.start + w.length());
  }
}

TEST(Suite, ChatWindowsStartAtAnAssistantTurn) {
  const auto dir = testing::write_eval_dir("chat");
  const Suite suite = make(spec(dir, 6));
  const auto tok = tokenizer();
  const auto windows = load_window_tokens(suite, dir.string(), *tok);
  ASSERT_TRUE(windows.ok()) << windows.status().message();
  int chat_windows = 0;
  for (size_t i = 0; i < suite.windows.size(); ++i) {
    if (suite.windows[i].domain != "chat") continue;
    ++chat_windows;
    const std::vector<int32_t>& tokens = windows.value()[i];
    EXPECT_EQ(tokens[0], 766);  // <|im_start|> in the synthetic vocabulary
    const auto text = tok->decode(tokens);
    ASSERT_TRUE(text.ok());
    EXPECT_EQ(text.value().rfind("<|im_start|>assistant\n", 0), 0u) << text.value();
  }
  EXPECT_EQ(chat_windows, 6);
}

TEST(Suite, ADomainWithoutRoomGetsFewerWindowsAndANote) {
  const auto dir = testing::write_eval_dir("short");
  testing::write_jsonl(dir / "tiny.jsonl", {{"t0", "tiny", "Too short."}, {"t1", "tiny", "Hi."}});
  std::vector<std::string> notes;
  SuiteSpec s = spec(dir, 40);
  const Suite suite = make(s, &notes);
  std::map<std::string, int> per_domain;
  for (const SuiteWindow& w : suite.windows) ++per_domain[w.domain];
  EXPECT_EQ(per_domain.count("tiny"), 0u);
  EXPECT_LT(per_domain["prose"], 40);
  EXPECT_GT(per_domain["prose"], 10);  // ~75 tokens a document, 16-token windows
  ASSERT_GE(notes.size(), 2u);
  EXPECT_NE(notes[0].find("only"), std::string::npos) << notes[0];
}

TEST(Suite, EncodesAndDecodesEveryField) {
  const auto dir = testing::write_eval_dir("roundtrip");
  const Suite suite = make(spec(dir));
  const auto decoded = decode_suite(encode_suite(suite), "suite.json");
  ASSERT_TRUE(decoded.ok()) << decoded.status().message();
  EXPECT_EQ(encode_suite(decoded.value()), encode_suite(suite));
  EXPECT_EQ(decoded.value().tokenizer_n_tokens, 768);
  EXPECT_EQ(decoded.value().seed, 1u);
}

TEST(Suite, MalformedSuitesAreOneLineNamingTheFile) {
  const auto dir = testing::write_eval_dir("malformed");
  std::string good = encode_suite(make(spec(dir)));
  const auto replace = [&](const std::string& from, const std::string& to) {
    std::string text = good;
    text.replace(text.find(from), from.size(), to);
    return text;
  };
  for (const std::string& bad :
       {std::string("not json"), std::string("{\"format\": \"something else\"}"),
        replace("\"version\": 1", "\"version\": 9"), replace("\"start\"", "\"begin\""),
        replace("\"prose-001\"", "\"prose-000\""), replace("\"prose-001\"", "\"../x\""),
        replace("\"prompt\": 6,\n   \"scored\"", "\"prompt\": 0,\n   \"scored\""),
        replace("\"format\": \"strata-eval-suite\"", "\"format\": 5"),
        replace("\"version\": 1", "\"version\": \"1\""), std::string("[1, 2]"),
        replace("\"prose-001\"", "\"prose\\n001\""), replace("\"seed\": 1", "\"seed\": 1e300"),
        replace("\"start\": ", "\"start\": -1e300, \"x\": "),
        replace("\"tokenizer\": {", "\"tokenizer\": 1, \"y\": {")}) {
    const auto decoded = decode_suite(bad, "bad-suite.json");
    ASSERT_FALSE(decoded.ok()) << bad;
    EXPECT_EQ(decoded.status().message().rfind("bad-suite.json: ", 0), 0u)
        << decoded.status().message();
    EXPECT_EQ(decoded.status().message().find('\n'), std::string::npos);
  }
}

TEST(Suite, RefusesMissingOrChangedSourcesAndOtherTokenizers) {
  const auto dir = testing::write_eval_dir("refusals");
  const Suite suite = make(spec(dir));
  const auto tok = tokenizer();

  const auto elsewhere = load_window_tokens(suite, (dir / "nowhere").string(), *tok);
  ASSERT_FALSE(elsewhere.ok());
  EXPECT_NE(elsewhere.status().message().find("chat.jsonl: missing"), std::string::npos)
      << elsewhere.status().message();

  const auto qwen3 = tokenizer(kQwen3Vocab);
  const auto other = load_window_tokens(suite, dir.string(), *qwen3);
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.status().message().find("another tokenizer"), std::string::npos)
      << other.status().message();

  std::ofstream(dir / "prose.jsonl", std::ios::app) << "\n";
  const auto changed = load_window_tokens(suite, dir.string(), *tok);
  ASSERT_FALSE(changed.ok());
  EXPECT_NE(changed.status().message().find("prose.jsonl: sha256"), std::string::npos)
      << changed.status().message();
  EXPECT_EQ(changed.status().message().find('\n'), std::string::npos);
}

TEST(Suite, MalformedDocumentsNameFileAndLine) {
  const auto dir = testing::scratch_dir("documents");
  std::ofstream(dir / "x.jsonl") << "{\"id\": \"a\", \"domain\": \"d\", \"text\": \"fine\"}\n"
                                 << "{\"id\": \"b\", \"text\": \"no domain\"}\n";
  const auto suite = make_suite(spec(dir), *tokenizer(), [](const std::string&) {});
  ASSERT_FALSE(suite.ok());
  EXPECT_NE(suite.status().message().find("x.jsonl:2: "), std::string::npos)
      << suite.status().message();
}

}  // namespace
}  // namespace strata::eval
