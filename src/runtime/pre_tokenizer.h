// Pre-tokenization: the regular expression that cuts text into words before BPE merges run
// inside each word. One table row per `tokenizer.ggml.pre` name (pre_tokenizer.cpp); the regex
// runs in PCRE2 with UTF and UCP, JIT-compiled where the platform allows.
//
// Thread-safety: a PreTokenizer is immutable after create(); split() may run concurrently.
#pragma once

#include <strata/status.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

struct pcre2_real_code_8;
struct pcre2_real_match_context_8;

namespace strata::runtime {

class PreTokenizer {
 public:
  // Compiles the regex of the named pre-tokenizer. Fails for a name with no table row; the
  // message names the pre-tokenizer and the ones supported.
  static Result<PreTokenizer> create(std::string_view name);

  const std::string& name() const { return name_; }

  // Cuts `text` into words and appends the end offset of each word to `word_ends`; the words
  // cover `text` exactly, in order (text no alternative matches becomes a word of its own, as
  // in llama.cpp). REQUIRES: `text` is repair_utf8() output (unicode_bytes.h).
  void split(std::string_view text, std::vector<size_t>* word_ends) const;

 private:
  struct CodeDeleter {
    void operator()(pcre2_real_code_8* code) const;
  };
  struct MatchContextDeleter {
    void operator()(pcre2_real_match_context_8* context) const;
  };

  PreTokenizer() = default;

  std::string name_;
  std::unique_ptr<pcre2_real_code_8, CodeDeleter> code_;
  std::unique_ptr<pcre2_real_match_context_8, MatchContextDeleter> match_context_;
};

}  // namespace strata::runtime
