#include "runtime/pre_tokenizer.h"

#include "base/check.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <fmt/format.h>

#include <cstring>
#include <limits>

namespace strata::runtime {
namespace {

struct PreTokenizerRow {
  std::string_view name;
  std::string_view pattern;
};

// qwen2: the pattern of Qwen2's tokenizer.json,
//   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|...
// with the case-insensitive group spelled out as llama.cpp spells it: under UCP, PCRE2's (?i:s)
// also matches U+017F (long s, which case-folds to s), and llama.cpp does not.
constexpr PreTokenizerRow kPreTokenizers[] = {
    {"qwen2",
     R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"},
};

// Characters PCRE2 cannot take or classes differently from llama.cpp, which the subject holds
// as U+E000 (EE 80 80: private use, neither letter, number nor space) instead. All are 3 bytes,
// so match offsets carry over unchanged:
//   ED A0..BF xx  an encoded surrogate, kept by repair_utf8 as llama.cpp keeps it; PCRE2 takes
//                 strict UTF-8 only, and llama.cpp classes surrogates like U+E000
//   E1 A0 8E      U+180E MONGOLIAN VOWEL SEPARATOR: PCRE2's \s includes it (it was a space
//                 before Unicode 6.3); llama.cpp's whitespace is the White_Space property
bool is_stand_in_needed(std::string_view text, size_t pos) {
  if (pos + 2 >= text.size()) return false;
  const auto byte = [&](size_t i) { return uint8_t(text[pos + i]); };
  return (byte(0) == 0xED && byte(1) >= 0xA0) ||
         (byte(0) == 0xE1 && byte(1) == 0xA0 && byte(2) == 0x8E);
}

// The subject to match: `text` itself, or a copy in `storage` with the stand-ins above.
std::string_view matchable(std::string_view text, std::string* storage) {
  for (size_t pos = 0; pos < text.size(); ++pos) {
    if (uint8_t(text[pos]) < 0xE1 || !is_stand_in_needed(text, pos)) continue;
    if (storage->empty()) storage->assign(text);
    std::memcpy(storage->data() + pos, "\xEE\x80\x80", 3);
    pos += 2;
  }
  return storage->empty() ? text : std::string_view(*storage);
}

size_t utf8_char_length(std::string_view text, size_t pos) {
  size_t end = pos + 1;
  while (end < text.size() && (uint8_t(text[end]) & 0xC0) == 0x80) ++end;
  return end - pos;
}

struct MatchDataDeleter {
  void operator()(pcre2_match_data* data) const { pcre2_match_data_free(data); }
};

}  // namespace

void PreTokenizer::CodeDeleter::operator()(pcre2_real_code_8* code) const { pcre2_code_free(code); }

void PreTokenizer::MatchContextDeleter::operator()(pcre2_real_match_context_8* context) const {
  pcre2_match_context_free(context);
}

Result<PreTokenizer> PreTokenizer::create(std::string_view name) {
  const PreTokenizerRow* row = nullptr;
  std::string supported;
  for (const PreTokenizerRow& candidate : kPreTokenizers) {
    if (candidate.name == name) row = &candidate;
    supported += fmt::format("{}{}", supported.empty() ? "" : ", ", candidate.name);
  }
  if (row == nullptr) {
    return Status::errorf("pre-tokenizer '{}' is not supported (supported: {})", name, supported);
  }
  int error_code = 0;
  PCRE2_SIZE error_offset = 0;
  pcre2_code* code =
      pcre2_compile(reinterpret_cast<PCRE2_SPTR>(row->pattern.data()), row->pattern.size(),
                    PCRE2_UTF | PCRE2_UCP, &error_code, &error_offset, nullptr);
  STRATA_CHECK(code != nullptr);  // the table's patterns are ours, not user input
  // Without JIT (e.g. where executable memory is forbidden) pcre2_match interprets instead.
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);

  PreTokenizer pre_tokenizer;
  pre_tokenizer.name_ = std::string(name);
  pre_tokenizer.code_.reset(code);
  pre_tokenizer.match_context_.reset(pcre2_match_context_create(nullptr));
  // A run of n spaces costs the \s*[\r\n]+ alternative O(n) steps in one match attempt; lift the
  // default limit (10 million) so a long run cannot make matching fail.
  pcre2_set_match_limit(pre_tokenizer.match_context_.get(), std::numeric_limits<uint32_t>::max());
  return pre_tokenizer;
}

void PreTokenizer::split(std::string_view text, std::vector<size_t>* word_ends) const {
  std::string storage;
  const std::string_view subject = matchable(text, &storage);
  std::unique_ptr<pcre2_match_data, MatchDataDeleter> match(pcre2_match_data_create(1, nullptr));
  const auto* bytes = reinterpret_cast<PCRE2_SPTR>(subject.data());
  size_t word_begin = 0;  // end of the last word emitted
  size_t search_from = 0;
  while (search_from < subject.size()) {
    const int rc = pcre2_match(code_.get(), bytes, subject.size(), search_from, PCRE2_NO_UTF_CHECK,
                               match.get(), match_context_.get());
    if (rc == PCRE2_ERROR_NOMATCH) break;
    STRATA_CHECK_OP(rc, >, 0);  // limits are lifted and the input is strict UTF-8
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match.get());
    const size_t begin = ovector[0];
    const size_t end = ovector[1];
    if (end == begin) {  // none of our patterns matches empty, but a table row could
      search_from = begin + utf8_char_length(subject, begin);
      continue;
    }
    if (begin > word_begin) word_ends->push_back(begin);
    word_ends->push_back(end);
    word_begin = search_from = end;
  }
  if (word_begin < subject.size()) word_ends->push_back(subject.size());
}

}  // namespace strata::runtime
