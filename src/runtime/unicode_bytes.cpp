#include "runtime/unicode_bytes.h"

#include "base/check.h"

#include <array>

namespace strata::runtime {
namespace {

constexpr char32_t kReplacement = 0xFFFD;
constexpr char32_t kMaxCodepoint = 0x10FFFF;
// The alphabet's code points all lie below U+0144 (256 + 68 remapped bytes).
constexpr char32_t kAlphabetEnd = 0x144;

constexpr bool is_printable_latin1(int byte) {
  return (byte >= 0x21 && byte <= 0x7E) || (byte >= 0xA1 && byte <= 0xAC) ||
         (byte >= 0xAE && byte <= 0xFF);
}

struct ByteAlphabet {
  std::array<char32_t, 256> codepoint{};
  std::array<char, 512> utf8{};  // two bytes per entry, the second unused for ASCII
  std::array<uint8_t, 256> utf8_length{};
  std::array<int16_t, kAlphabetEnd> byte{};
};

constexpr ByteAlphabet make_alphabet() {
  ByteAlphabet alphabet;
  for (auto& entry : alphabet.byte) entry = -1;
  char32_t next_remapped = 0x100;
  for (int byte = 0; byte < 256; ++byte) {
    const char32_t cp = is_printable_latin1(byte) ? char32_t(byte) : next_remapped++;
    alphabet.codepoint[byte] = cp;
    alphabet.byte[cp] = int16_t(byte);
    if (cp < 0x80) {
      alphabet.utf8[2 * byte] = char(cp);
      alphabet.utf8_length[byte] = 1;
    } else {
      alphabet.utf8[2 * byte] = char(0xC0 | (cp >> 6));
      alphabet.utf8[2 * byte + 1] = char(0x80 | (cp & 0x3F));
      alphabet.utf8_length[byte] = 2;
    }
  }
  return alphabet;
}

constexpr ByteAlphabet kAlphabet = make_alphabet();

bool is_continuation(uint8_t byte) { return (byte & 0xC0) == 0x80; }

// Sequence length announced by a lead byte, llama.cpp's way: 1 for ASCII, 0 for a byte that
// cannot start a sequence (a continuation byte, or 0xF8..0xFF).
int lead_length(uint8_t lead) {
  if (lead < 0x80) return 1;
  if ((lead & 0x40) == 0) return 0;
  if ((lead & 0x20) == 0) return 2;
  if ((lead & 0x10) == 0) return 3;
  if ((lead & 0x08) == 0) return 4;
  return 0;
}

int shortest_length(char32_t cp) { return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4; }

bool is_surrogate(char32_t cp) { return cp >= 0xD800 && cp <= 0xDFFF; }

}  // namespace

char32_t byte_to_codepoint(uint8_t byte) { return kAlphabet.codepoint[byte]; }

std::string_view byte_to_utf8(uint8_t byte) {
  return {&kAlphabet.utf8[2 * byte], kAlphabet.utf8_length[byte]};
}

int byte_from_codepoint(char32_t codepoint) {
  return codepoint < kAlphabetEnd ? kAlphabet.byte[codepoint] : -1;
}

void append_utf8(char32_t cp, std::string* out) {
  STRATA_CHECK_LE(uint32_t(cp), uint32_t(kMaxCodepoint));
  if (cp < 0x80) {
    out->push_back(char(cp));
  } else if (cp < 0x800) {
    out->push_back(char(0xC0 | (cp >> 6)));
    out->push_back(char(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(char(0xE0 | (cp >> 12)));
    out->push_back(char(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(char(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(char(0xF0 | (cp >> 18)));
    out->push_back(char(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(char(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(char(0x80 | (cp & 0x3F)));
  }
}

LenientCodepoint decode_utf8_lenient(std::string_view text, size_t pos) {
  const uint8_t lead = uint8_t(text[pos]);
  const int length = lead_length(lead);
  if (length == 1) return {lead, 1, true};
  if (length == 0 || pos + length > text.size()) return {kReplacement, 1, false};
  static constexpr uint8_t kLeadMask[5] = {0, 0, 0x1F, 0x0F, 0x07};
  char32_t cp = lead & kLeadMask[length];
  for (int i = 1; i < length; ++i) {
    const uint8_t byte = uint8_t(text[pos + i]);
    if (!is_continuation(byte)) return {kReplacement, 1, false};
    cp = (cp << 6) | (byte & 0x3F);
  }
  return {cp, length, true};
}

bool is_strict_utf8(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    if (uint8_t(text[pos]) < 0x80) {
      ++pos;
      continue;
    }
    const LenientCodepoint read = decode_utf8_lenient(text, pos);
    if (!read.valid || read.codepoint > kMaxCodepoint || is_surrogate(read.codepoint) ||
        shortest_length(read.codepoint) != read.n_bytes) {
      return false;
    }
    pos += read.n_bytes;
  }
  return true;
}

std::string repair_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 8);
  size_t pos = 0;
  while (pos < text.size()) {
    const LenientCodepoint read = decode_utf8_lenient(text, pos);
    // Surrogates pass through append_utf8 as ED A0..BF xx, as in llama.cpp.
    append_utf8(read.codepoint > kMaxCodepoint ? kReplacement : read.codepoint, &out);
    pos += read.n_bytes;
  }
  return out;
}

std::string Utf8Stream::push(std::string_view piece) {
  pending_.append(piece);
  // Find the last byte that is not a continuation byte, at most 3 bytes back.
  size_t cut = pending_.size();
  const size_t n = pending_.size();
  for (size_t back = 1; back <= 4 && back <= n; ++back) {
    const uint8_t byte = uint8_t(pending_[n - back]);
    if (is_continuation(byte)) continue;
    if (lead_length(byte) > int(back)) cut = n - back;
    break;
  }
  std::string ready = pending_.substr(0, cut);
  pending_.erase(0, cut);
  return ready;
}

std::string Utf8Stream::finish() {
  std::string rest;
  rest.swap(pending_);
  return rest;
}

}  // namespace strata::runtime
