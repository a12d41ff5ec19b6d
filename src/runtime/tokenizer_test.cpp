// The tokenizer on small vocabularies built by hand, where the right answer follows from the
// BPE and special-token rules (tokenizer.h) by inspection. tokenizer_golden_test.cpp checks the
// real vocabularies against llama.cpp.
#include "runtime/tokenizer.h"

#include "runtime/unicode_bytes.h"

#include <gtest/gtest.h>

namespace strata::runtime {
namespace {

// A vocabulary of the 256 byte tokens plus `extra` tokens (type, text) and `merges`; token ids
// are 0..255 for bytes in byte order, then the extras in order.
VocabSpec make_spec(std::vector<std::pair<int, std::string>> extra,
                    std::vector<std::string> merges) {
  VocabSpec spec;
  spec.source = "hand.gguf";
  spec.model = "gpt2";
  spec.pre = "qwen2";
  for (int byte = 0; byte < 256; ++byte) {
    spec.tokens.emplace_back(byte_to_utf8(uint8_t(byte)));
    spec.token_types.push_back(1);
  }
  for (auto& [type, text] : extra) {
    spec.tokens.push_back(std::move(text));
    spec.token_types.push_back(type);
  }
  spec.merges = std::move(merges);
  return spec;
}

Tokenizer make_tokenizer(VocabSpec spec) {
  auto vocab = Vocab::build(std::move(spec));
  EXPECT_TRUE(vocab.ok()) << vocab.status().message();
  auto tokenizer = Tokenizer::from_vocab(std::move(vocab).value());
  EXPECT_TRUE(tokenizer.ok()) << tokenizer.status().message();
  return std::move(tokenizer).value();
}

Tokenizer make_tokenizer(std::vector<std::pair<int, std::string>> extra,
                         std::vector<std::string> merges) {
  return make_tokenizer(make_spec(std::move(extra), std::move(merges)));
}

constexpr int kNormal = 1, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6;
using Ids = std::vector<int32_t>;

TEST(Bpe, LowestRankMergesFirst) {
  // ids: ab = 256, bc = 257
  const Tokenizer bc_first = make_tokenizer({{kNormal, "ab"}, {kNormal, "bc"}}, {"b c", "a b"});
  EXPECT_EQ(bc_first.encode("abc", false), (Ids{'a', 257}));
  const Tokenizer ab_first = make_tokenizer({{kNormal, "ab"}, {kNormal, "bc"}}, {"a b", "b c"});
  EXPECT_EQ(ab_first.encode("abc", false), (Ids{256, 'c'}));
}

TEST(Bpe, TiesGoLeftmost) {
  const Tokenizer tokenizer = make_tokenizer({{kNormal, "aa"}}, {"a a"});
  EXPECT_EQ(tokenizer.encode("aaa", false), (Ids{256, 'a'}));
  EXPECT_EQ(tokenizer.encode("aaaaa", false), (Ids{256, 256, 'a'}));
}

TEST(Bpe, MergesChainAcrossRanks) {
  // aa = 256, aaaa = 257; "aa aa" can only apply once both halves exist.
  const Tokenizer tokenizer =
      make_tokenizer({{kNormal, "aa"}, {kNormal, "aaaa"}}, {"a a", "aa aa"});
  EXPECT_EQ(tokenizer.encode("aaaaaa", false), (Ids{257, 256}));
  EXPECT_EQ(tokenizer.encode("Ġaaaa", false), (Ids{0xC4, 0xA0, 257}));  // 'Ġ' is two bytes
}

TEST(Bpe, WordsDoNotMergeAcrossPreTokens) {
  const Tokenizer tokenizer = make_tokenizer({{kNormal, "aĠ"}, {kNormal, "Ġa"}}, {"a Ġ", "Ġ a"});
  EXPECT_EQ(tokenizer.encode("a a", false), (Ids{'a', 257}));  // words "a", " a"
}

// A merge may produce a string that is no token; it can still merge further, and if it
// survives, llama.cpp emits the tokens of its single bytes instead.
TEST(Bpe, IntermediateSymbolsThatAreNotTokens) {
  const Tokenizer tokenizer = make_tokenizer({{kNormal, "xyz"}}, {"x y", "xy z"});
  EXPECT_EQ(tokenizer.encode("xyz", false), (Ids{256}));
  EXPECT_EQ(tokenizer.encode("xy", false), (Ids{'x', 'y'}));
}

TEST(Bpe, BytesWithoutATokenAreDropped) {
  VocabSpec spec = make_spec({}, {});
  spec.tokens['q'] = "[not q]";
  const Tokenizer tokenizer = make_tokenizer(std::move(spec));
  EXPECT_EQ(tokenizer.encode("aqa", false), (Ids{'a', 'a'}));
}

// Specials: <|c|> = 256 (control), <u> = 257 (user-defined), AB = 258, BCD = 259.
Tokenizer special_tokenizer() {
  return make_tokenizer(
      {{kControl, "<|c|>"}, {kUserDefined, "<u>"}, {kUserDefined, "AB"}, {kUserDefined, "BCD"}},
      {});
}

TEST(SpecialTokens, ControlTokensOnlyWithParseSpecial) {
  const Tokenizer tokenizer = special_tokenizer();
  EXPECT_EQ(tokenizer.encode("<|c|>x<|c|><|c|>", true), (Ids{256, 'x', 256, 256}));
  EXPECT_EQ(tokenizer.encode("<|c|>", false), (Ids{'<', '|', 'c', '|', '>'}));
}

TEST(SpecialTokens, UserDefinedTokensAlways) {
  const Tokenizer tokenizer = special_tokenizer();
  EXPECT_EQ(tokenizer.encode("<u>", false), (Ids{257}));
  EXPECT_EQ(tokenizer.encode("a<u>b", true), (Ids{'a', 257, 'b'}));
}

// llama.cpp looks for the longest special token first everywhere, then the next: in "ABCD"
// BCD wins although AB starts earlier.
TEST(SpecialTokens, LongestFirstNotLeftmostFirst) {
  const Tokenizer tokenizer = special_tokenizer();
  EXPECT_EQ(tokenizer.encode("xABCDx", false), (Ids{'x', 'A', 259, 'x'}));
  EXPECT_EQ(tokenizer.encode("ABxAB", false), (Ids{258, 'x', 258}));
}

TEST(SpecialTokens, EmptyTextHasNoTokens) {
  EXPECT_EQ(special_tokenizer().encode("", true), Ids{});
}

TEST(Decode, PiecesByTokenType) {
  const Tokenizer tokenizer = make_tokenizer({{kControl, "<|c|>"},
                                              {kUserDefined, "<u>"},
                                              {kByte, "<0x0A>"},
                                              {kUnused, "gone"},
                                              {kNormal, "ĠhiĊ"}},
                                             {});
  EXPECT_EQ(tokenizer.decode_piece(' '), "\x20");  // the byte token spelled 'Ġ'
  EXPECT_EQ(tokenizer.decode_piece(256), "<|c|>");
  EXPECT_EQ(tokenizer.decode_piece(257), "<u>");
  EXPECT_EQ(tokenizer.decode_piece(258), "\n");
  EXPECT_EQ(tokenizer.decode_piece(259), "");
  EXPECT_EQ(tokenizer.decode_piece(260), " hi\n");
  const Ids ids = {256, 260, 257, 258};
  EXPECT_EQ(tokenizer.decode(ids).value(), "<|c|> hi\n<u>\n");
  EXPECT_EQ(tokenizer.decode(ids, /*render_special=*/false).value(), " hi\n<u>\n");
  const Ids bad = {'a', 261};
  EXPECT_EQ(tokenizer.decode(bad).status().message(),
            "hand.gguf: token id 261 is outside the vocabulary (0..260)");
}

TEST(Vocab, EndOfGenerationAndControlByText) {
  VocabSpec spec = make_spec({{kNormal, "<|im_end|>"},
                              {kUserDefined, "<|fim_pad|>"},
                              {kUserDefined, "<|fim_prefix|>"},
                              {kNormal, "</s>"}},
                             {});
  spec.special_ids = {{"eos", 259}, {"bos", 1000}};
  const Tokenizer tokenizer = make_tokenizer(std::move(spec));
  const Vocab& vocab = tokenizer.vocab();
  EXPECT_EQ(vocab.eog_ids(), (Ids{256, 257, 259}));
  EXPECT_EQ(vocab.attr(256), kAttrNormal | kAttrControl);
  EXPECT_EQ(vocab.attr(257), kAttrUserDefined | kAttrControl);
  EXPECT_EQ(vocab.attr(258), kAttrUserDefined | kAttrControl);
  EXPECT_EQ(vocab.attr(259), kAttrNormal);
  EXPECT_EQ(tokenizer.bos_id(), kNoToken);  // out of range: ignored, as llama.cpp does
  EXPECT_EQ(tokenizer.eos_id(), 259);
  // Now CONTROL, the FIM token is no longer matched without parse_special.
  EXPECT_EQ(tokenizer.encode("<|fim_prefix|>", false).size(), 14u);
  EXPECT_EQ(tokenizer.encode("<|fim_prefix|>", true), (Ids{258}));
}

TEST(Vocab, BadSpecsAreRefused) {
  auto message = [](VocabSpec spec) {
    auto vocab = Vocab::build(std::move(spec));
    return vocab.ok() ? std::string("ok") : vocab.status().message();
  };
  VocabSpec llama = make_spec({}, {});
  llama.model = "llama";
  EXPECT_EQ(message(std::move(llama)),
            "hand.gguf: tokenizer model 'llama' is not supported (only gpt2, byte-level BPE)");
  EXPECT_EQ(message(make_spec({{kNormal, "a"}}, {})),
            "hand.gguf: key tokenizer.ggml.tokens: tokens 97 and 256 have the same text");
  EXPECT_EQ(message(make_spec({}, {"ab"})),
            "hand.gguf: key tokenizer.ggml.merges: merge 0 ('ab') is not two symbols");
  VocabSpec short_types = make_spec({}, {});
  short_types.token_types.pop_back();
  EXPECT_EQ(message(std::move(short_types)),
            "hand.gguf: key tokenizer.ggml.token_type: 255 entries for 256 tokens");
  VocabSpec other_pre = make_spec({}, {});
  other_pre.pre = "llama-bpe";
  auto vocab = Vocab::build(std::move(other_pre));
  ASSERT_TRUE(vocab.ok());
  EXPECT_EQ(Tokenizer::from_vocab(std::move(vocab).value()).status().message(),
            "hand.gguf: pre-tokenizer 'llama-bpe' is not supported (supported: qwen2)");
}

}  // namespace
}  // namespace strata::runtime
