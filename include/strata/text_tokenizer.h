// A model's tokenizer on its own: works on full models and on vocab-only GGUF files.
#pragma once

#include <strata/status.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace strata {

class TextTokenizer {
 public:
  // Errors name the file (missing vocabulary keys, unsupported tokenizer model).
  static Result<std::unique_ptr<TextTokenizer>> open(const std::string& path);
  ~TextTokenizer();

  // Ids of `text`, with BOS first when the model asks for it. Special tokens written in the
  // text become their ids when parse_special.
  std::vector<int32_t> encode(std::string_view text, bool parse_special = true) const;
  // Bytes of the ids; fails for an id outside the vocabulary.
  Result<std::string> decode(std::span<const int32_t> ids) const;
  int32_t token_count() const;

 private:
  struct Impl;
  explicit TextTokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata
