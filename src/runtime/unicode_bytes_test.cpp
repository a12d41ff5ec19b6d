#include "runtime/unicode_bytes.h"

#include <gtest/gtest.h>

#include <random>
#include <set>

namespace strata::runtime {
namespace {

// The characters every GPT-2-style vocabulary shows for these bytes ('Ġ' for space, 'Ċ' for
// newline, ...): fixed points of the alphabet that do not depend on how it is computed.
TEST(ByteAlphabet, WellKnownCharacters) {
  EXPECT_EQ(byte_to_codepoint(' '), U'Ġ');
  EXPECT_EQ(byte_to_codepoint('\n'), U'Ċ');
  EXPECT_EQ(byte_to_codepoint('\t'), U'ĉ');
  EXPECT_EQ(byte_to_codepoint('\r'), U'č');
  EXPECT_EQ(byte_to_codepoint(0x00), U'Ā');
  EXPECT_EQ(byte_to_codepoint(0x7F), U'ġ');
  EXPECT_EQ(byte_to_codepoint(0xA0), U'ł');
  EXPECT_EQ(byte_to_codepoint(0xAD), U'Ń');
  EXPECT_EQ(byte_to_codepoint('!'), U'!');
  EXPECT_EQ(byte_to_codepoint(0xE9), U'é');
  EXPECT_EQ(byte_to_utf8(' '), "Ġ");
  EXPECT_EQ(byte_to_utf8('A'), "A");
}

// Exhaustive: a bijection between the 256 bytes and 256 code points below U+0144, printable
// Latin-1 standing for itself, and byte_to_utf8 the UTF-8 of byte_to_codepoint.
TEST(ByteAlphabet, IsABijection) {
  std::set<char32_t> seen;
  for (int byte = 0; byte < 256; ++byte) {
    const char32_t cp = byte_to_codepoint(uint8_t(byte));
    EXPECT_LT(cp, 0x144u);
    EXPECT_TRUE(seen.insert(cp).second) << byte;
    EXPECT_EQ(byte_from_codepoint(cp), byte);
    const bool printable = (byte >= 0x21 && byte <= 0x7E) || (byte >= 0xA1 && byte != 0xAD);
    EXPECT_EQ(cp == char32_t(byte), printable) << byte;
    std::string utf8;
    append_utf8(cp, &utf8);
    EXPECT_EQ(byte_to_utf8(uint8_t(byte)), utf8);
  }
  int n_outside = 0;
  for (char32_t cp = 0; cp < 0x11000; ++cp) n_outside += byte_from_codepoint(cp) < 0;
  EXPECT_EQ(n_outside, 0x11000 - 256);
}

std::string utf8_of(char32_t cp) {
  std::string out;
  append_utf8(cp, &out);
  return out;
}

// Every scalar value round-trips through append_utf8 and the lenient decoder, and is strict;
// every surrogate decodes (llama.cpp accepts them) but is not strict.
TEST(Utf8, EveryCodepoint) {
  for (char32_t cp = 0; cp <= 0x10FFFF; ++cp) {
    const std::string utf8 = utf8_of(cp);
    const LenientCodepoint read = decode_utf8_lenient(utf8, 0);
    ASSERT_TRUE(read.valid) << uint32_t(cp);
    ASSERT_EQ(read.codepoint, cp);
    ASSERT_EQ(read.n_bytes, int(utf8.size()));
    const bool surrogate = cp >= 0xD800 && cp <= 0xDFFF;
    ASSERT_EQ(is_strict_utf8(utf8), !surrogate) << uint32_t(cp);
    ASSERT_EQ(repair_utf8(utf8), utf8);
  }
}

// llama.cpp's unicode_cpts_from_utf8: a byte that does not start a well-formed sequence is
// U+FFFD and decoding resumes at the next byte; overlong forms decode to their value.
TEST(Utf8, RepairFollowsLlamaCpp) {
  const std::string fffd = "\xEF\xBF\xBD";
  const std::pair<std::string, std::string> cases[] = {
      {"", ""},
      {"plain ascii", "plain ascii"},
      {"\xFF", fffd},
      {"\x80", fffd},
      {"a\xC3", "a" + fffd},      // truncated 2-byte form
      {"\xE2\x82", fffd + fffd},  // truncated 3-byte form
      {"\xE2\x82"
       "A",
       fffd + fffd + "A"},                       // bad continuation
      {"\xC0\x80", std::string(1, '\0')},        // overlong NUL
      {"\xC1\xBF", "\x7F"},                      // overlong DEL
      {"\xE0\x80\xAF", "/"},                     // overlong '/'
      {"\xF0\x82\x82\xAC", "\xE2\x82\xAC"},      // overlong euro sign
      {"\xED\xA0\x80", "\xED\xA0\x80"},          // surrogate: kept
      {"\xF4\x8F\xBF\xBF", "\xF4\x8F\xBF\xBF"},  // U+10FFFF
      {"\xF4\x90\x80\x80", fffd},                // above U+10FFFF: llama.cpp throws
      {"\xF8\x88\x80\x80\x80", fffd + fffd + fffd + fffd + fffd},
      {"\xC3\xA9t\xC3\xA9", "\xC3\xA9t\xC3\xA9"},
  };
  for (const auto& [input, expected] : cases) {
    EXPECT_EQ(repair_utf8(input), expected) << testing::PrintToString(input);
    EXPECT_EQ(is_strict_utf8(input), input == expected && input.find('\xED') == std::string::npos)
        << testing::PrintToString(input);
  }
}

TEST(Utf8, RepairOfRandomBytesIsStableAndDecodable) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 2000; ++trial) {
    std::string bytes(rng() % 24, '\0');
    for (char& byte : bytes) byte = char(rng());
    const std::string repaired = repair_utf8(bytes);
    EXPECT_EQ(repair_utf8(repaired), repaired);
    for (size_t pos = 0; pos < repaired.size();) {
      const LenientCodepoint read = decode_utf8_lenient(repaired, pos);
      ASSERT_TRUE(read.valid);
      pos += read.n_bytes;
    }
  }
}

// Feeding a text one byte at a time: every chunk ends on a character boundary and the chunks
// add up to the text.
TEST(Utf8Stream, NeverSplitsACharacter) {
  const std::string text = "Grüße, 世界! 🦙 ok \xC3\xA9";
  Utf8Stream stream;
  std::string joined;
  for (const char byte : text) {
    const std::string chunk = stream.push(std::string_view(&byte, 1));
    EXPECT_TRUE(is_strict_utf8(chunk)) << testing::PrintToString(chunk);
    joined += chunk;
  }
  joined += stream.finish();
  EXPECT_EQ(joined, text);
}

TEST(Utf8Stream, HoldsOnlyWhatCanStillComplete) {
  Utf8Stream stream;
  EXPECT_EQ(stream.push("a\xF0\x9F"), "a");  // first half of an emoji
  EXPECT_EQ(stream.push("\xA6"), "");
  EXPECT_EQ(stream.push("\x99"
                        "b"),
            "\xF0\x9F\xA6\x99"
            "b");
  EXPECT_EQ(stream.push("\xFF"), "\xFF");  // can never become a character: out at once
  EXPECT_EQ(stream.push("\x80\x80"), "\x80\x80");
  EXPECT_EQ(stream.push("\xE4\xB8"), "");
  EXPECT_EQ(stream.push("x"), "\xE4\xB8x");  // the sequence broke: passed through as it is
  EXPECT_EQ(stream.push("\xE4"), "");
  EXPECT_EQ(stream.finish(), "\xE4");
  EXPECT_EQ(stream.finish(), "");
}

}  // namespace
}  // namespace strata::runtime
