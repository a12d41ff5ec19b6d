#include "runtime/pre_tokenizer.h"

#include <gtest/gtest.h>

namespace strata::runtime {
namespace {

std::vector<std::string> split(std::string_view text) {
  static const PreTokenizer pre_tokenizer = PreTokenizer::create("qwen2").value();
  std::vector<size_t> ends;
  pre_tokenizer.split(text, &ends);
  std::vector<std::string> words;
  size_t begin = 0;
  for (const size_t end : ends) {
    words.emplace_back(text.substr(begin, end - begin));
    begin = end;
  }
  return words;
}

using Words = std::vector<std::string>;

// Expected splits worked out by hand from the Qwen2 regex:
//   (?i:'s|'t|'re|'ve|'m|'ll|'d) | [^\r\n\p{L}\p{N}]?\p{L}+ | \p{N} | ?[^\s\p{L}\p{N}]+[\r\n]*
//   | \s*[\r\n]+ | \s+(?!\S) | \s+
TEST(PreTokenizerQwen2, Words) {
  EXPECT_EQ(split(""), Words{});
  EXPECT_EQ(split("Hello world"), (Words{"Hello", " world"}));
  EXPECT_EQ(split("  Hello"), (Words{" ", " Hello"}));    // \s+(?!\S) leaves the last space
  EXPECT_EQ(split("x  \ty"), (Words{"x", "  ", "\ty"}));  // a tab may lead a word
  EXPECT_EQ(split("3333"), (Words{"3", "3", "3", "3"}));  // one digit per word
  EXPECT_EQ(split("½x"), (Words{"½", "x"}));              // ½ is \p{N} (No)
  EXPECT_EQ(split("a\n\nb"), (Words{"a", "\n\n", "b"}));
  EXPECT_EQ(split("a \n b"), (Words{"a", " \n", " b"}));
  EXPECT_EQ(split("!!!\n\nabc"), (Words{"!!!\n\n", "abc"}));
  EXPECT_EQ(split(" (x)"), (Words{" (", "x", ")"}));
  EXPECT_EQ(split("end.   "), (Words{"end", ".", "   "}));
}

TEST(PreTokenizerQwen2, Contractions) {
  EXPECT_EQ(split("I'm"), (Words{"I", "'m"}));
  EXPECT_EQ(split("WE'LL"), (Words{"WE", "'LL"}));
  EXPECT_EQ(split("we'Ve"), (Words{"we", "'Ve"}));
  EXPECT_EQ(split("a'x"), (Words{"a", "'x"}));  // no contraction: the quote leads the word
  // U+017F (long s) case-folds to 's', but llama.cpp's [sS] does not match it.
  EXPECT_EQ(split("'\xC5\xBFt"), (Words{"'\xC5\xBFt"}));
}

TEST(PreTokenizerQwen2, UnicodeClasses) {
  EXPECT_EQ(split("нещо на"), (Words{"нещо", " на"}));
  EXPECT_EQ(split("a\u00A0b"), (Words{"a", "\u00A0b"}));  // NBSP leads the word
  EXPECT_EQ(split("a\u3000\u3000b"), (Words{"a", "\u3000", "\u3000b"}));
  EXPECT_EQ(split("我想在apple"), (Words{"我想在apple"}));  // all \p{L}
  EXPECT_EQ(split("🦙.cpp"), (Words{"🦙.", "cpp"}));
  // An encoded surrogate (kept by repair_utf8, as llama.cpp keeps it) and U+180E (not
  // White_Space since Unicode 6.3, but in PCRE2's \s) class like punctuation, as in llama.cpp.
  EXPECT_EQ(split("a\xED\xA0\x80"
                  "b"),
            (Words{"a",
                   "\xED\xA0\x80"
                   "b"}));
  EXPECT_EQ(split("!\xED\xBF\xBF"), (Words{"!\xED\xBF\xBF"}));
  EXPECT_EQ(split("!\u180E"), (Words{"!\u180E"}));
  EXPECT_EQ(split("!\u2028"), (Words{"!", "\u2028"}));  // a White_Space character
}

// Long runs must neither hit a PCRE2 limit nor take quadratic time.
TEST(PreTokenizerQwen2, LongRuns) {
  const size_t n = 1 << 20;
  EXPECT_EQ(split(std::string(n, ' ')), Words{std::string(n, ' ')});
  EXPECT_EQ(split(std::string(n, 'a')), Words{std::string(n, 'a')});
  EXPECT_EQ(split(std::string(n, '\n')), Words{std::string(n, '\n')});
  EXPECT_EQ(split(std::string(n, ' ') + "x"), (Words{std::string(n - 1, ' '), " x"}));
  EXPECT_EQ(split(std::string(n, '=')), Words{std::string(n, '=')});
  std::string mixed;
  for (size_t i = 0; i < n / 4; ++i) mixed += " \t\n ";
  const Words words = split(mixed);
  std::string joined;
  for (const std::string& word : words) joined += word;
  EXPECT_EQ(joined, mixed);
}

TEST(PreTokenizer, UnknownNameIsRefused) {
  const auto result = PreTokenizer::create("llama-bpe");
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().message(),
            "pre-tokenizer 'llama-bpe' is not supported (supported: qwen2)");
}

}  // namespace
}  // namespace strata::runtime
