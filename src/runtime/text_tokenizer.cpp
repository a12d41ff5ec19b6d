#include <strata/text_tokenizer.h>

#include "gguf/gguf_file.h"
#include "runtime/tokenizer.h"

namespace strata {

struct TextTokenizer::Impl {
  runtime::Tokenizer tokenizer;
};

TextTokenizer::TextTokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TextTokenizer::~TextTokenizer() = default;

Result<std::unique_ptr<TextTokenizer>> TextTokenizer::open(const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(auto file, gguf::GgufFile::open(path));
  STRATA_ASSIGN_OR_RETURN(auto tokenizer, runtime::Tokenizer::from_gguf(*file));
  return std::unique_ptr<TextTokenizer>(
      new TextTokenizer(std::make_unique<Impl>(Impl{std::move(tokenizer)})));
}

std::vector<int32_t> TextTokenizer::encode(std::string_view text, bool parse_special) const {
  std::vector<int32_t> ids;
  if (impl_->tokenizer.add_bos() && impl_->tokenizer.bos_id() >= 0)
    ids.push_back(impl_->tokenizer.bos_id());
  const auto encoded = impl_->tokenizer.encode(text, parse_special);
  ids.insert(ids.end(), encoded.begin(), encoded.end());
  return ids;
}

Result<std::string> TextTokenizer::decode(std::span<const int32_t> ids) const {
  return impl_->tokenizer.decode(ids);
}

int32_t TextTokenizer::token_count() const { return impl_->tokenizer.token_count(); }

}  // namespace strata
