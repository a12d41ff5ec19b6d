// The GPT-2 byte <-> unicode alphabet of byte-level BPE, and the UTF-8 handling the tokenizer
// needs: llama.cpp-compatible repair of invalid input, and a stream that never splits a character.
//
// Byte alphabet (GPT-2 `bytes_to_unicode`): the 188 bytes that are printable Latin-1
// (0x21-0x7E, 0xA1-0xAC, 0xAE-0xFF) stand for the code point of the same value; the other 68
// bytes (controls, space, 0x7F-0xA0, 0xAD) stand, in increasing byte order, for U+0100..U+0143.
// So space is U+0120 'Ġ' and '\n' is U+010A 'Ċ', and vocabulary strings hold no raw whitespace.
//
// Thread-safety: all functions are pure; a Utf8Stream is a value owned by one caller.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace strata::runtime {

// The code point that stands for `byte` in vocabulary strings.
char32_t byte_to_codepoint(uint8_t byte);
// UTF-8 of byte_to_codepoint(byte): one byte (printable ASCII) or two.
std::string_view byte_to_utf8(uint8_t byte);
// The byte a code point of the alphabet stands for, or -1 if it is not in the alphabet.
int byte_from_codepoint(char32_t codepoint);

// Appends the UTF-8 encoding of `codepoint` (REQUIRES: codepoint <= 0x10FFFF).
void append_utf8(char32_t codepoint, std::string* out);

// One code point read the way llama.cpp reads input (unicode_cpt_from_utf8): the lead byte's
// high bits give the length, continuation bytes must be 10xxxxxx, and nothing else is checked,
// so overlong forms and surrogates decode. `n_bytes` is how far to advance; when !valid it is 1
// and llama.cpp substitutes U+FFFD for that byte.
struct LenientCodepoint {
  char32_t codepoint;
  int n_bytes;
  bool valid;
};
LenientCodepoint decode_utf8_lenient(std::string_view text, size_t pos);

// True if `text` is strict UTF-8 (shortest forms, no surrogates, at most U+10FFFF).
bool is_strict_utf8(std::string_view text);

// The text llama.cpp's tokenizer actually splits and merges: each byte that does not start a
// well-formed sequence becomes U+FFFD (EF BF BD), overlong forms are re-encoded shortest, and
// encoded surrogates (ED A0..BF xx) are kept as they are. Where llama.cpp would throw, on a
// 4-byte form above U+10FFFF, this writes one U+FFFD for the whole sequence instead.
std::string repair_utf8(std::string_view text);

// Holds back a trailing incomplete UTF-8 sequence so that streamed output (a chat UI printing
// token pieces as they come) never shows half a character. Bytes that cannot become a valid
// character are passed through at once.
class Utf8Stream {
 public:
  // Returns the bytes held so far plus `piece`, up to the last complete character.
  std::string push(std::string_view piece);
  // Returns whatever is still held (an incomplete sequence at the end of the stream).
  std::string finish();

 private:
  std::string pending_;
};

}  // namespace strata::runtime
